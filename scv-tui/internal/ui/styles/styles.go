// Package styles holds the TUI's one Styles value: every colour and text
// attribute the components use, built from a few semantic tokens, so that
// no component hard-codes a colour.
package styles

import (
	"image/color"

	"charm.land/lipgloss/v2"
)

// Styles is every style the TUI renders with. Components receive it; they
// never build their own colours.
type Styles struct {
	User       lipgloss.Style // the user's prompts
	UserBar    lipgloss.Style // the bar left of a prompt
	Assistant  lipgloss.Style // streaming assistant text
	Notice     lipgloss.Style // neutral notices (compaction, trims)
	Warning    lipgloss.Style // warnings (seq gaps, limits)
	Error      lipgloss.Style // failures and server problems
	Dim        lipgloss.Style // secondary text
	Bold       lipgloss.Style
	ToolName   lipgloss.Style
	ToolOK     lipgloss.Style
	ToolFail   lipgloss.Style
	ToolRun    lipgloss.Style
	ToolWait   lipgloss.Style
	Dialog     lipgloss.Style // the approval dialog's frame
	DialogHint lipgloss.Style
	Panel      lipgloss.Style // queue and picker titles
	Selected   lipgloss.Style // the selected row of a list
	Status     lipgloss.Style // the status bar
	StatusWarn lipgloss.Style
	Banner     lipgloss.Style // the demo banner
	Cursor     lipgloss.Style // the editor's cursor cell
	Prompt     lipgloss.Style // the editor's "> "
	// MarkdownStyle is the glamour style of finished replies.
	MarkdownStyle string
}

// palette is the semantic colour tokens of one terminal background.
type palette struct {
	accent, good, bad, warn, muted, surface, text color.Color
	markdown                                      string
}

// dark suits dark backgrounds (Tokyo Night); light suits light ones
// (Tokyo Night Day): every token keeps a contrast of at least 4.5:1 with
// its background, so that the text is readable on either.
var (
	dark = palette{
		accent: lipgloss.Color("#7aa2f7"), good: lipgloss.Color("#9ece6a"), bad: lipgloss.Color("#f7768e"),
		warn: lipgloss.Color("#e0af68"), muted: lipgloss.Color("#787c99"), surface: lipgloss.Color("#24283b"),
		text: lipgloss.Color("#c0caf5"), markdown: "dark",
	}
	light = palette{
		accent: lipgloss.Color("#2959aa"), good: lipgloss.Color("#385f0d"), bad: lipgloss.Color("#b01e3b"),
		warn: lipgloss.Color("#7a4d00"), muted: lipgloss.Color("#5a607a"), surface: lipgloss.Color("#d5d8e3"),
		text: lipgloss.Color("#1f2335"), markdown: "light",
	}
)

// Default returns the TUI's styles for a dark terminal, the assumption
// until the terminal says otherwise.
func Default() Styles { return build(dark) }

// Light returns the TUI's styles for a light terminal.
func Light() Styles { return build(light) }

// For returns the styles for a dark or a light background.
func For(isDark bool) Styles {
	if isDark {
		return Default()
	}
	return Light()
}

func build(p palette) Styles {
	return Styles{
		User:          lipgloss.NewStyle().Foreground(p.text).Bold(true),
		UserBar:       lipgloss.NewStyle().Foreground(p.accent),
		Assistant:     lipgloss.NewStyle().Foreground(p.text),
		Notice:        lipgloss.NewStyle().Foreground(p.muted).Italic(true),
		Warning:       lipgloss.NewStyle().Foreground(p.warn),
		Error:         lipgloss.NewStyle().Foreground(p.bad),
		Dim:           lipgloss.NewStyle().Foreground(p.muted),
		Bold:          lipgloss.NewStyle().Bold(true),
		ToolName:      lipgloss.NewStyle().Foreground(p.accent).Bold(true),
		ToolOK:        lipgloss.NewStyle().Foreground(p.good),
		ToolFail:      lipgloss.NewStyle().Foreground(p.bad),
		ToolRun:       lipgloss.NewStyle().Foreground(p.warn),
		ToolWait:      lipgloss.NewStyle().Foreground(p.warn).Bold(true),
		Dialog:        lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(p.warn).Padding(0, 1),
		DialogHint:    lipgloss.NewStyle().Foreground(p.muted),
		Panel:         lipgloss.NewStyle().Foreground(p.accent).Bold(true),
		Selected:      lipgloss.NewStyle().Reverse(true),
		Status:        lipgloss.NewStyle().Foreground(p.text).Background(p.surface),
		StatusWarn:    lipgloss.NewStyle().Foreground(p.warn).Background(p.surface).Bold(true),
		Banner:        lipgloss.NewStyle().Foreground(p.warn),
		Cursor:        lipgloss.NewStyle().Reverse(true),
		Prompt:        lipgloss.NewStyle().Foreground(p.accent).Bold(true),
		MarkdownStyle: p.markdown,
	}
}
