package styles

import (
	"image/color"
	"math"
	"testing"
)

// luminance is the WCAG relative luminance of c.
func luminance(c color.Color) float64 {
	r, g, b, _ := c.RGBA()
	lin := func(v uint32) float64 {
		s := float64(v) / 0xffff
		if s <= 0.03928 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(r) + 0.7152*lin(g) + 0.0722*lin(b)
}

func contrast(a, b color.Color) float64 {
	la, lb := luminance(a), luminance(b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

// TestPalettesReadable: every text colour of each palette stands out from a
// typical background of its kind (black, white) and from the status bar's
// surface, so that neither light nor dark terminals get unreadable text.
func TestPalettesReadable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		p    palette
		bg   color.Color
		min  float64
	}{
		{"dark", dark, color.Black, 4.5},
		{"light", light, color.White, 4.5},
	}
	for _, c := range cases {
		for name, fg := range map[string]color.Color{"accent": c.p.accent, "good": c.p.good, "bad": c.p.bad, "warn": c.p.warn, "muted": c.p.muted, "text": c.p.text} {
			if got := contrast(fg, c.bg); got < c.min {
				t.Errorf("%s palette: %s has contrast %.2f with the background, want at least %.1f", c.name, name, got, c.min)
			}
		}
		for name, fg := range map[string]color.Color{"text": c.p.text, "warn": c.p.warn} {
			if got := contrast(fg, c.p.surface); got < 4.5 {
				t.Errorf("%s palette: %s on the status bar has contrast %.2f, want at least 4.5", c.name, name, got)
			}
		}
	}
	if For(false).MarkdownStyle != "light" || For(true).MarkdownStyle != "dark" {
		t.Error("For picks the wrong Markdown style")
	}
}
