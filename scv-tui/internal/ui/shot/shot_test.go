package shot

import (
	"bytes"
	"image/color"
	"image/png"
	"os"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	g := Parse("\x1b[1;38;2;1;2;3mab\x1b[0m c\x1b[48;5;196m界\x1b[7mx\x1b]8;;u\x07\n\x1b[0;34mz", 8, 2)
	if g[0][0].r != 'a' || !g[0][0].bold || g[0][0].fg != (color.RGBA{1, 2, 3, 0xff}) {
		t.Errorf("cell 0 = %+v", g[0][0])
	}
	if g[0][2].bold || g[0][3].r != 'c' {
		t.Errorf("reset not applied: %+v %+v", g[0][2], g[0][3])
	}
	if g[0][4].r != '界' || g[0][4].bg != (color.RGBA{0xff, 0, 0, 0xff}) || g[0][5].r != 0 {
		t.Errorf("wide cell = %+v %+v", g[0][4], g[0][5])
	}
	if g[0][6].r != 'x' || g[0][6].fg != (color.RGBA{0xff, 0, 0, 0xff}) {
		t.Errorf("reversed cell = %+v", g[0][6])
	}
	if g[1][0].r != 'z' || g[1][0].fg != xterm(4) {
		t.Errorf("second line = %+v", g[1][0])
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	const reg, bold = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf"
	if _, err := os.Stat(reg); err != nil {
		t.Skip("DejaVu Sans Mono is not installed")
	}
	f, err := LoadFonts(reg, bold, 15)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Render(&b, Parse("\x1b[41m \x1b[0mhi", 4, 1), f); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if got := img.Bounds().Dx(); got != 6*f.cellW {
		t.Errorf("width %d, want %d", got, 6*f.cellW)
	}
	r, _, _, _ := img.At(f.cellW+1, f.cellW+1).RGBA()
	if uint8(r>>8) != xterm(1).(color.RGBA).R {
		t.Errorf("the red cell is not red: r=%d", r>>8)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("\x1b[1;38;2;1;2;3mab\x1b[0m", 10, 3)
	f.Add("\x1b[38;5", 2, 1)
	f.Add("\x1b]8;;", 1, 1)
	f.Fuzz(func(t *testing.T, s string, cols, rows int) {
		cols, rows = min(max(cols, 0), 200), min(max(rows, 0), 60)
		g := Parse(s, cols, rows)
		if len(g) != rows {
			t.Fatalf("%d rows, want %d", len(g), rows)
		}
	})
}
