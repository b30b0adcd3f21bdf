package skills

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseFrontMatter: any SKILL.md either parses into a name without
// line feeds and a description, or is refused with an error; it never
// panics. (Discover checks the name's characters with validName.)
func FuzzParseFrontMatter(f *testing.F) {
	for _, seed := range []string{
		"---\nname: release-checks\ndescription: Checks before a release.\n---\nBody\n",
		"---\nname: 'quoted'\ndescription: >\n  folded\n  text\n---\n",
		"---\r\nname: \"dq\"\r\ndescription: |\r\n  literal\r\n---\r\n",
		"\xef\xbb\xbf---\nname: bom\ndescription: d\n---\n",
		"no front matter",
		"---\nname: unterminated\n",
		"---\n---\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		name, desc, err := ParseFrontMatter(data)
		if err != nil {
			if name != "" || desc != "" {
				t.Fatalf("an error with values: %q %q %v", name, desc, err)
			}
			return
		}
		if strings.Contains(name, "\n") {
			t.Fatalf("name %q spans lines", name)
		}
		if utf8.Valid(data) && (!utf8.ValidString(name) || !utf8.ValidString(desc)) {
			t.Fatalf("invalid UTF-8 out of valid input: %q %q", name, desc)
		}
	})
}
