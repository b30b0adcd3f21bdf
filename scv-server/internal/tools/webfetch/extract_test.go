package webfetch

import (
	"strings"
	"testing"
)

// chromeAttrSimple is the plain statement of chromeAttr's rule, to check
// the allocation-free version against.
func chromeAttrSimple(v string) bool {
	for _, name := range strings.FieldsFunc(v, func(r rune) bool { return r < 0x80 && isSpaceByte(byte(r)) }) {
		if chromeName(name) {
			return true
		}
	}
	return false
}

func TestChromeAttr(t *testing.T) {
	tests := []struct {
		v    string
		want bool
	}{
		{"sidebar", true},
		{"SideBar", true},
		{"main-content sidebar-left", true},
		{"site_header", true},
		{"Site-Header", true},
		{"story-related", true},
		{"cookie_banner", true},
		{"content article", false},
		{"navigational", false},
		{"", false},
		{"   ", false},
		{"a-very-long-class-name-that-goes-past-the-sixty-four-byte-buffer-sidebar", true},
		{"a-very-long-class-name-that-goes-past-the-sixty-four-byte-buffer-content", false},
		{"x\tnav\ny", true},
		{"--__--", false},
	}
	for _, tc := range tests {
		if got := chromeAttr(tc.v); got != tc.want {
			t.Errorf("chromeAttr(%q) = %v, want %v", tc.v, got, tc.want)
		}
		if got := chromeAttrSimple(tc.v); got != tc.want {
			t.Errorf("chromeAttrSimple(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func FuzzChromeAttr(f *testing.F) {
	for _, s := range []string{"sidebar", "Site-Header x", "nav_bar", "a b\tc", strings.Repeat("x-", 40) + "ads"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got, want := chromeAttr(v), chromeAttrSimple(v); got != want {
			t.Fatalf("chromeAttr(%q) = %v, the plain rule says %v", v, got, want)
		}
	})
}
