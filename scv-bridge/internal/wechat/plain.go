package wechat

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/scv-cli/scv/shared/textcut"
)

// ChunkRunes is the most characters one text message carries: the
// official client cuts at 4,000; 3,800 leaves room, as cc-connect does.
const ChunkRunes = 3800

var (
	mdImage   = regexp.MustCompile(`!\[([^\]]*)\]\(([^)\s]+)[^)]*\)`)
	mdLink    = regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)[^)]*\)`)
	mdBold    = regexp.MustCompile(`(\*\*|__)([^*_\n]+?)(\*\*|__)`)
	mdItalic  = regexp.MustCompile(`(^|[\s(])[*_]([^*_\s][^*_\n]*?)[*_]([\s).,;:!?]|$)`)
	mdStrike  = regexp.MustCompile(`~~([^~\n]+)~~`)
	mdCode    = regexp.MustCompile("`([^`\n]+)`")
	mdHeading = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	mdBullet  = regexp.MustCompile(`^(\s*)[-*+]\s+`)
	mdRule    = regexp.MustCompile(`^\s{0,3}([-*_])(\s*[-*_]){2,}\s*$`)
	mdQuote   = regexp.MustCompile(`^\s{0,3}>\s?`)
)

// PlainText turns Markdown into text that reads well in WeChat, which
// shows Markdown literally: markers go, headings become their text, list
// bullets become "•", links become "text (url)", code keeps its content
// verbatim (fenced blocks untouched, without the fences).
func PlainText(md string) string {
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	out := make([]string, 0, len(lines))
	inFence := false
	for _, l := range lines {
		trim := strings.TrimSpace(l)
		if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
			inFence = !inFence
			continue
		}
		if inFence {
			out = append(out, l)
			continue
		}
		out = append(out, plainLine(l))
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

func plainLine(l string) string {
	// Each rule runs only when its marker is present: most lines have
	// none, and the regular expressions are the cost.
	if t := strings.TrimLeft(l, " "); t != "" && strings.ContainsRune("-*_#>+", rune(t[0])) {
		if mdRule.MatchString(l) {
			return "──────────"
		}
		if m := mdHeading.FindStringSubmatch(l); m != nil {
			l = m[1]
		}
		l = mdQuote.ReplaceAllString(l, "│ ")
		l = mdBullet.ReplaceAllString(l, "$1• ")
	}
	if !strings.ContainsAny(l, "`*_~[") {
		return l
	}
	// Inline code first, so that markers inside it survive.
	var codes []string
	if strings.IndexByte(l, '`') >= 0 {
		l = mdCode.ReplaceAllStringFunc(l, func(s string) string {
			codes = append(codes, s[1:len(s)-1])
			return "\x00"
		})
	}
	if strings.Contains(l, "](") {
		l = mdImage.ReplaceAllString(l, "$1 ($2)")
		l = mdLink.ReplaceAllStringFunc(l, func(s string) string {
			m := mdLink.FindStringSubmatch(s)
			if m[1] == m[2] {
				return m[2]
			}
			return m[1] + " (" + m[2] + ")"
		})
	}
	if strings.Contains(l, "**") || strings.Contains(l, "__") {
		l = mdBold.ReplaceAllString(l, "$2")
	}
	if strings.Contains(l, "~~") {
		l = mdStrike.ReplaceAllString(l, "$1")
	}
	if strings.ContainsAny(l, "*_") {
		l = mdItalic.ReplaceAllString(l, "$1$2$3")
	}
	for _, c := range codes {
		l = strings.Replace(l, "\x00", c, 1)
	}
	return l
}

// SplitText cuts plain text into messages of at most ChunkRunes
// characters, at paragraph, then line, then word boundaries, never inside
// a character (shared/textcut). Pieces are trimmed of the blank lines
// they were cut at; empty text gives no piece.
func SplitText(s string) []string {
	var out []string
	for _, p := range textcut.Chunks(s, ChunkRunes) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// MergeHeld joins held reports into one message for the flush on the
// owner's next message.
func MergeHeld(reports []string) string {
	return strings.Join(reports, "\n\n──────────\n\n")
}

// HeldNotice is the one short message saying reports wait.
func HeldNotice(n int) string {
	if n == 1 {
		return "1 report is waiting; reply anything to receive it."
	}
	return strconv.Itoa(n) + " reports are waiting; reply anything to receive them."
}
