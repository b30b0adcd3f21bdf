// Package shot renders a terminal screen captured with its escapes
// (tmux capture-pane -e -p) to a PNG image, for the screenshots in docs/.
// It understands the SGR attributes the TUI uses: reset, bold, italic
// (drawn plain), reverse, and 16, 256 and 24-bit colours; other escapes
// are skipped. Each rune takes the cells ansi.StringWidth gives it.
package shot

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// Background and Foreground are the terminal's default colours (Tokyo
// Night, the dark palette's surroundings).
var (
	Background = color.RGBA{0x1a, 0x1b, 0x26, 0xff}
	Foreground = color.RGBA{0xc0, 0xca, 0xf5, 0xff}
)

// Defaults are the colours of cells that set none: those of the terminal
// the screen was captured in.
type Defaults struct {
	Background, Foreground color.Color
}

// Dark is a dark terminal's defaults (Background, Foreground); Light a
// light one's (Tokyo Night Day).
var (
	Dark  = Defaults{Background: Background, Foreground: Foreground}
	Light = Defaults{Background: color.RGBA{0xe1, 0xe2, 0xe7, 0xff}, Foreground: color.RGBA{0x37, 0x60, 0xbf, 0xff}}
)

// Fonts are a regular and a bold monospace face.
type Fonts struct {
	Regular, Bold font.Face
	cellW, cellH  int
	ascent        int
}

// LoadFonts opens the regular and bold TrueType files at size points
// (72 dpi: size is in pixels).
func LoadFonts(regular, bold string, size float64) (*Fonts, error) {
	open := func(path string) (font.Face, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading the font: %w", err)
		}
		f, err := opentype.Parse(b)
		if err != nil {
			return nil, fmt.Errorf("parsing the font %s: %w", path, err)
		}
		return opentype.NewFace(f, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingFull})
	}
	r, err := open(regular)
	if err != nil {
		return nil, err
	}
	b, err := open(bold)
	if err != nil {
		return nil, err
	}
	adv, _ := r.GlyphAdvance('M')
	m := r.Metrics()
	return &Fonts{Regular: r, Bold: b, cellW: adv.Ceil(), cellH: (m.Height).Ceil() + 2, ascent: m.Ascent.Ceil() + 1}, nil
}

// cell is one screen cell.
type cell struct {
	r      rune
	fg, bg color.Color
	bold   bool
}

// pen is the current SGR state.
type pen struct {
	fg, bg        color.Color
	bold, reverse bool
}

// Parse turns captured lines into cells, cols wide and rows high, from a
// dark terminal.
func Parse(screen string, cols, rows int) [][]cell { return ParseWith(screen, cols, rows, Dark) }

// ParseWith is Parse from a terminal with the default colours d (what a
// reversed cell without colours shows).
func ParseWith(screen string, cols, rows int, d Defaults) [][]cell {
	grid := make([][]cell, rows)
	for y := range grid {
		grid[y] = make([]cell, cols)
		for x := range grid[y] {
			grid[y][x] = cell{r: ' '}
		}
	}
	lines := strings.Split(strings.ReplaceAll(screen, "\r", ""), "\n")
	var p pen
	for y := 0; y < min(rows, len(lines)); y++ {
		x := 0
		s := lines[y]
		for i := 0; i < len(s) && x < cols; {
			if s[i] == 0x1b {
				n := escapeLen(s[i:])
				if n > 2 && s[i+1] == '[' && s[i+n-1] == 'm' {
					p.apply(s[i+2 : i+n-1])
				}
				i += n
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			i += size
			w := ansi.StringWidth(string(r))
			if w == 0 {
				continue
			}
			fg, bg := p.fg, p.bg
			if p.reverse {
				fg, bg = orDefault(bg, d.Background), orDefault(fg, d.Foreground)
			}
			grid[y][x] = cell{r: r, fg: fg, bg: bg, bold: p.bold}
			for k := 1; k < w && x+k < cols; k++ {
				grid[y][x+k] = cell{r: 0, bg: bg}
			}
			x += w
		}
	}
	return grid
}

// escapeLen is the length of the escape sequence at the start of s.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[':
		for i := 2; i < len(s); i++ {
			if s[i] >= 0x40 && s[i] <= 0x7e {
				return i + 1
			}
		}
	case ']':
		for i := 2; i < len(s); i++ {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
	default:
		return 2
	}
	return len(s)
}

func orDefault(c, d color.Color) color.Color {
	if c == nil {
		return d
	}
	return c
}

// apply applies the parameters of one SGR sequence.
func (p *pen) apply(params string) {
	ps := strings.FieldsFunc(params, func(r rune) bool { return r == ';' || r == ':' })
	if len(ps) == 0 {
		*p = pen{}
		return
	}
	for i := 0; i < len(ps); i++ {
		n, err := strconv.Atoi(ps[i])
		if err != nil {
			continue
		}
		switch {
		case n == 0:
			*p = pen{}
		case n == 1:
			p.bold = true
		case n == 22:
			p.bold = false
		case n == 7:
			p.reverse = true
		case n == 27:
			p.reverse = false
		case n >= 30 && n <= 37:
			p.fg = xterm(n - 30)
		case n >= 90 && n <= 97:
			p.fg = xterm(n - 90 + 8)
		case n >= 40 && n <= 47:
			p.bg = xterm(n - 40)
		case n >= 100 && n <= 107:
			p.bg = xterm(n - 100 + 8)
		case n == 39:
			p.fg = nil
		case n == 49:
			p.bg = nil
		case n == 38 || n == 48:
			c, used := extended(ps[i+1:])
			i += used
			if n == 38 {
				p.fg = c
			} else {
				p.bg = c
			}
		}
	}
}

// extended reads "5;N" or "2;R;G;B" after 38 or 48.
func extended(ps []string) (color.Color, int) {
	num := func(i int) int {
		if i >= len(ps) {
			return 0
		}
		n, _ := strconv.Atoi(ps[i])
		return min(max(n, 0), 255)
	}
	if len(ps) == 0 {
		return nil, 0
	}
	switch ps[0] {
	case "5":
		return xterm(num(1)), 2
	case "2":
		return color.RGBA{uint8(num(1)), uint8(num(2)), uint8(num(3)), 0xff}, 4
	}
	return nil, 1
}

// xterm is colour n of the xterm 256-colour palette.
func xterm(n int) color.Color {
	base := []color.RGBA{
		{0x15, 0x16, 0x1e, 0xff}, {0xf7, 0x76, 0x8e, 0xff}, {0x9e, 0xce, 0x6a, 0xff}, {0xe0, 0xaf, 0x68, 0xff},
		{0x7a, 0xa2, 0xf7, 0xff}, {0xbb, 0x9a, 0xf7, 0xff}, {0x7d, 0xcf, 0xff, 0xff}, {0xa9, 0xb1, 0xd6, 0xff},
		{0x41, 0x48, 0x68, 0xff}, {0xf7, 0x76, 0x8e, 0xff}, {0x9e, 0xce, 0x6a, 0xff}, {0xe0, 0xaf, 0x68, 0xff},
		{0x7a, 0xa2, 0xf7, 0xff}, {0xbb, 0x9a, 0xf7, 0xff}, {0x7d, 0xcf, 0xff, 0xff}, {0xc0, 0xca, 0xf5, 0xff},
	}
	switch {
	case n < 16:
		return base[max(n, 0)]
	case n < 232:
		n -= 16
		step := func(v int) uint8 {
			if v == 0 {
				return 0
			}
			return uint8(55 + 40*v)
		}
		return color.RGBA{step(n / 36), step(n / 6 % 6), step(n % 6), 0xff}
	default:
		g := uint8(8 + 10*(min(n, 255)-232))
		return color.RGBA{g, g, g, 0xff}
	}
}

// Render draws grid with f to a PNG on w, with a margin of one cell, in a
// dark terminal.
func Render(w io.Writer, grid [][]cell, f *Fonts) error { return RenderWith(w, grid, f, Dark) }

// RenderWith is Render in a terminal with the default colours d.
func RenderWith(w io.Writer, grid [][]cell, f *Fonts, d Defaults) error {
	rows := len(grid)
	cols := 0
	if rows > 0 {
		cols = len(grid[0])
	}
	pad := f.cellW
	img := image.NewRGBA(image.Rect(0, 0, cols*f.cellW+2*pad, rows*f.cellH+2*pad))
	draw.Draw(img, img.Bounds(), image.NewUniform(d.Background), image.Point{}, draw.Src)
	for y, line := range grid {
		for x, c := range line {
			px, py := pad+x*f.cellW, pad+y*f.cellH
			if c.bg != nil {
				draw.Draw(img, image.Rect(px, py, px+f.cellW, py+f.cellH), image.NewUniform(c.bg), image.Point{}, draw.Src)
			}
			if c.r == 0 || c.r == ' ' {
				continue
			}
			face := f.Regular
			if c.bold {
				face = f.Bold
			}
			d := font.Drawer{Dst: img, Src: image.NewUniform(orDefault(c.fg, d.Foreground)), Face: face,
				Dot: fixed.P(px, py+f.ascent)}
			d.DrawString(string(c.r))
		}
	}
	return png.Encode(w, img)
}
