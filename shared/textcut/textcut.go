// Package textcut cuts text to a byte or rune budget without splitting a
// UTF-8 character. It is the one place that knows how: outputs bounded
// for the model, lines bounded for a person, tails of logs and files read
// up to a limit all cut through it.
//
// The byte functions work on strings and byte slices alike. On valid
// UTF-8 they return valid UTF-8. On invalid input they move the cut by at
// most three bytes (the most a character can overhang it) and leave the
// invalid bytes to the caller, which replaces them where it shows text.
package textcut

import (
	"strings"
	"unicode/utf8"
)

// Text is what the byte functions cut.
type Text interface{ ~string | ~[]byte }

// Prefix returns the longest prefix of s of at most n bytes that does not
// end inside a character. n <= 0 gives the empty prefix.
func Prefix[T Text](s T, n int) T {
	if n <= 0 {
		return s[:0]
	}
	if len(s) <= n {
		return s
	}
	return TrimPartialEnd(s[:n])
}

// Suffix returns the longest suffix of s of at most n bytes that does not
// begin inside a character. n <= 0 gives the empty suffix.
func Suffix[T Text](s T, n int) T {
	if n <= 0 {
		return s[len(s):]
	}
	if len(s) <= n {
		return s
	}
	return TrimPartialStart(s[len(s)-n:])
}

// TrimPartialEnd drops an incomplete character from the end of s: what is
// left of a character that a read or an earlier cut split. It drops at
// most three bytes.
func TrimPartialEnd[T Text](s T) T {
	// The last character starts at most UTFMax-1 bytes before the end.
	for k := len(s) - 1; k >= 0 && k >= len(s)-utf8.UTFMax; k-- {
		if utf8.RuneStart(s[k]) {
			if !utf8.FullRuneInString(string(s[k:])) {
				return s[:k]
			}
			break
		}
	}
	return s
}

// TrimPartialStart drops the continuation bytes that begin s when a cut
// took the start of their character. It drops at most three bytes.
func TrimPartialStart[T Text](s T) T {
	// A character has at most UTFMax-1 continuation bytes, so one of the
	// first UTFMax bytes of valid text starts a character.
	for k := 0; k < len(s) && k < utf8.UTFMax; k++ {
		if utf8.RuneStart(s[k]) {
			return s[k:]
		}
	}
	if len(s) < utf8.UTFMax {
		// Only continuation bytes: all of them belonged to a cut character.
		return s[len(s):]
	}
	// Four continuation bytes are not the end of one character: invalid
	// text, left for the caller to replace.
	return s
}

// Runes returns the first n characters of s, or s when it has no more.
// n <= 0 gives "".
func Runes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// Chunks splits s into pieces of at most n characters each, for channels
// that cap one message: it cuts after the last paragraph break ("\n\n") in
// a piece, else after the last line break, else after the last space, and
// only as a last resort inside a word (never inside a character). Joined
// back together the pieces are s. n <= 0 or an empty s gives no pieces.
func Chunks(s string, n int) []string {
	if n <= 0 || s == "" {
		return nil
	}
	var out []string
	for s != "" {
		head := Runes(s, n)
		if len(head) == len(s) {
			out = append(out, s)
			break
		}
		cut := len(head)
		for _, sep := range []string{"\n\n", "\n", " "} {
			// A break in the first half of the piece would make many tiny
			// messages; cut inside the word instead.
			if i := strings.LastIndex(head, sep); i > 0 && i+len(sep) > len(head)/2 {
				cut = i + len(sep)
				break
			}
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}
