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

// Semantic colour tokens.
var (
	accent  color.Color = lipgloss.Color("#7aa2f7")
	good    color.Color = lipgloss.Color("#9ece6a")
	bad     color.Color = lipgloss.Color("#f7768e")
	warn    color.Color = lipgloss.Color("#e0af68")
	muted   color.Color = lipgloss.Color("#787c99")
	surface color.Color = lipgloss.Color("#24283b")
	text    color.Color = lipgloss.Color("#c0caf5")
)

// Default returns the TUI's styles for a dark terminal.
func Default() Styles {
	return Styles{
		User:          lipgloss.NewStyle().Foreground(text).Bold(true),
		UserBar:       lipgloss.NewStyle().Foreground(accent),
		Assistant:     lipgloss.NewStyle().Foreground(text),
		Notice:        lipgloss.NewStyle().Foreground(muted).Italic(true),
		Warning:       lipgloss.NewStyle().Foreground(warn),
		Error:         lipgloss.NewStyle().Foreground(bad),
		Dim:           lipgloss.NewStyle().Foreground(muted),
		Bold:          lipgloss.NewStyle().Bold(true),
		ToolName:      lipgloss.NewStyle().Foreground(accent).Bold(true),
		ToolOK:        lipgloss.NewStyle().Foreground(good),
		ToolFail:      lipgloss.NewStyle().Foreground(bad),
		ToolRun:       lipgloss.NewStyle().Foreground(warn),
		ToolWait:      lipgloss.NewStyle().Foreground(warn).Bold(true),
		Dialog:        lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(warn).Padding(0, 1),
		DialogHint:    lipgloss.NewStyle().Foreground(muted),
		Panel:         lipgloss.NewStyle().Foreground(accent).Bold(true),
		Selected:      lipgloss.NewStyle().Reverse(true),
		Status:        lipgloss.NewStyle().Foreground(text).Background(surface),
		StatusWarn:    lipgloss.NewStyle().Foreground(warn).Background(surface).Bold(true),
		Banner:        lipgloss.NewStyle().Foreground(warn),
		Cursor:        lipgloss.NewStyle().Reverse(true),
		Prompt:        lipgloss.NewStyle().Foreground(accent).Bold(true),
		MarkdownStyle: "dark",
	}
}
