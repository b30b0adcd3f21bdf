package textcut

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPrefix(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"hello", 0, ""},
		{"hello", -1, ""},
		{"", 3, ""},
		{"héllo", 2, "h"},               // é is two bytes: cutting after its first drops it
		{"héllo", 3, "hé"},              // whole
		{"a€b", 2, "a"},                 // € is three bytes
		{"a€b", 3, "a"},                 // two of them
		{"a€b", 4, "a€"},                // all three
		{"a😀b", 4, "a"},                 // 😀 is four bytes: three of them
		{"a😀b", 5, "a😀"},                // all four
		{"€€", 4, "€"},                  // a second character cut after its first byte
		{"a\xffb", 2, "a\xff"},          // invalid bytes are not moved over: the caller replaces them
		{"ab\xe2\x82", 4, "ab\xe2\x82"}, // short input is returned as is, even incomplete
		{"ab\xe2\x82c", 4, "ab"},        // a truncated sequence at the cut goes
	} {
		if got := Prefix(c.s, c.n); got != c.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
		if got := string(Prefix([]byte(c.s), c.n)); got != c.want {
			t.Errorf("Prefix([]byte(%q), %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestSuffix(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 3, "llo"},
		{"hello", 0, ""},
		{"hello", -2, ""},
		{"héllo", 4, "llo"}, // the last byte of é is dropped
		{"héllo", 5, "éllo"},
		{"a€b", 2, "b"},
		{"a€b", 3, "b"},
		{"a€b", 4, "€b"},
		{"a😀", 3, ""}, // three of four bytes: nothing whole
		{"a😀", 4, "😀"},
		{"a\x80\x80\x80\x80b", 5, "\x80\x80\x80\x80b"}, // four continuation bytes are invalid text, kept
	} {
		if got := Suffix(c.s, c.n); got != c.want {
			t.Errorf("Suffix(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
		if got := string(Suffix([]byte(c.s), c.n)); got != c.want {
			t.Errorf("Suffix([]byte(%q), %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestTrimPartial(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ s, end, start string }{
		{"", "", ""},
		{"abc", "abc", "abc"},
		{"ab\xe2\x82", "ab", "ab\xe2\x82"},
		{"\x82\xacab", "\x82\xacab", "ab"},
		{"\xf0\x9f\x98", "", "\xf0\x9f\x98"},
		{"\x9f\x98\x80", "\x9f\x98\x80", ""},
		{"€", "€", "€"},
		{"a\xff", "a\xff", "a\xff"}, // a lone invalid byte is complete: FullRune says so
	} {
		if got := TrimPartialEnd(c.s); got != c.end {
			t.Errorf("TrimPartialEnd(%q) = %q, want %q", c.s, got, c.end)
		}
		if got := TrimPartialStart(c.s); got != c.start {
			t.Errorf("TrimPartialStart(%q) = %q, want %q", c.s, got, c.start)
		}
	}
}

func TestRunes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 3, "hel"},
		{"hello", 5, "hello"},
		{"hello", 9, "hello"},
		{"hello", 0, ""},
		{"héllo", 2, "hé"},
		{"😀😀😀", 2, "😀😀"},
		{"", 4, ""},
	} {
		if got := Runes(c.s, c.n); got != c.want {
			t.Errorf("Runes(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

// FuzzCut checks the promises of every function on any input: the bound,
// the prefix or suffix property, valid output from valid input, and that
// a cut gives up no more than one character's worth of the budget.
func FuzzCut(f *testing.F) {
	for _, s := range []string{"", "hello", "héllo wörld", "a€b😀c", "ab\xe2\x82c", "\x80\x80\x80\x80", strings.Repeat("€", 20)} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n %= len(s) + 5
		valid := utf8.ValidString(s)

		p := Prefix(s, n)
		if !strings.HasPrefix(s, p) {
			t.Fatalf("Prefix(%q, %d) = %q is not a prefix", s, n, p)
		}
		if len(p) > max(n, 0) {
			t.Fatalf("Prefix(%q, %d) = %q is over the budget", s, n, p)
		}
		if valid && !utf8.ValidString(p) {
			t.Fatalf("Prefix(%q, %d) = %q is not valid UTF-8", s, n, p)
		}
		if n > 0 && len(p) < min(n, len(s))-(utf8.UTFMax-1) {
			t.Fatalf("Prefix(%q, %d) = %q gave up more than a character", s, n, p)
		}
		if string(Prefix([]byte(s), n)) != p {
			t.Fatalf("Prefix differs for bytes and strings on %q, %d", s, n)
		}

		x := Suffix(s, n)
		if !strings.HasSuffix(s, x) {
			t.Fatalf("Suffix(%q, %d) = %q is not a suffix", s, n, x)
		}
		if len(x) > max(n, 0) {
			t.Fatalf("Suffix(%q, %d) = %q is over the budget", s, n, x)
		}
		if valid && !utf8.ValidString(x) {
			t.Fatalf("Suffix(%q, %d) = %q is not valid UTF-8", s, n, x)
		}
		if n > 0 && len(x) < min(n, len(s))-(utf8.UTFMax-1) {
			t.Fatalf("Suffix(%q, %d) = %q gave up more than a character", s, n, x)
		}

		r := Runes(s, n)
		if !strings.HasPrefix(s, r) {
			t.Fatalf("Runes(%q, %d) = %q is not a prefix", s, n, r)
		}
		if got, want := utf8.RuneCountInString(r), min(max(n, 0), utf8.RuneCountInString(s)); got != want {
			t.Fatalf("Runes(%q, %d) = %q has %d characters, want %d", s, n, r, got, want)
		}
	})
}

func TestChunks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s    string
		n    int
		want []string
	}{
		{"", 5, nil},
		{"abc", 0, nil},
		{"abc", 5, []string{"abc"}},
		{"para one\n\npara two", 12, []string{"para one\n\n", "para two"}},
		{"line a\nline b", 10, []string{"line a\n", "line b"}},
		{"word word word", 10, []string{"word word ", "word"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"日本語のテキスト", 3, []string{"日本語", "のテキ", "スト"}},
		// A break early in the piece is ignored: cut inside the word.
		{"a bcdefghijk", 6, []string{"a bcde", "fghijk"}},
	} {
		got := Chunks(c.s, c.n)
		if !slices.Equal(got, c.want) {
			t.Errorf("Chunks(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
		if strings.Join(got, "") != c.s && c.n > 0 {
			t.Errorf("Chunks(%q, %d) lost text", c.s, c.n)
		}
		for _, p := range got {
			if utf8.RuneCountInString(p) > c.n {
				t.Errorf("Chunks(%q, %d): piece %q too long", c.s, c.n, p)
			}
		}
	}
}
