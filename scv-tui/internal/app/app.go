// Package app is the scv-tui Bubble Tea model: it speaks protocol v3 to
// scv-server through the wire layer (Options.Send, and the ServerStarted,
// ServerEvent and ServerProblem messages), and composes the components of
// internal/ui into the screen.
//
// One model owns Update. The components are imperative structs with their
// own small update methods and views; Update never does IO (Send only
// queues a message; Restart runs in a tea.Cmd).
package app

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/approval"
	"github.com/scv-cli/scv/scv-tui/internal/ui/complete"
	"github.com/scv-cli/scv/scv-tui/internal/ui/editor"
	"github.com/scv-cli/scv/scv-tui/internal/ui/markdown"
	"github.com/scv-cli/scv/scv-tui/internal/ui/mcpview"
	"github.com/scv-cli/scv/scv-tui/internal/ui/picker"
	"github.com/scv-cli/scv/scv-tui/internal/ui/queue"
	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
	"github.com/scv-cli/scv/scv-tui/internal/ui/transcript"
)

// Options configure the model.
type Options struct {
	// Send queues one message to the server. It does not block on the
	// server (the wire layer keeps a bounded queue); it returns an error
	// when the server is gone or the queue is full.
	Send func(protocol.ClientMessage) error
	// Restart stops the current server process (if any) and starts a new
	// one; the wire layer then delivers ServerStarted again. Called when
	// the user accepts the offer to restart.
	Restart func() error
	// Workspace is the absolute workspace directory (the TUI's cwd).
	Workspace string
	// LogPath is where the server's stderr goes; /help shows it.
	LogPath string
	// History is the prompt history of this workspace; may be nil.
	History History
	// Resume is a session id to resume at start ("" = new session).
	Resume string
	// Attach is a session open in the daemon to attach to at start,
	// with the replay of its recent events (--attach; see attach.go).
	Attach string
	// Model overrides the server's model ("" = server default).
	Model string
	// Prompt is sent as if typed once the first session is ready (the
	// command line's PROMPT): a prompt, or a /command.
	Prompt string
	// Theme is ThemeDark or ThemeLight to choose the styles; "" asks the
	// terminal for its background and picks them from its answer (dark
	// until it answers, and when it never does).
	Theme string
}

// History is the prompt history (Up/Down recall) of one workspace.
type History interface {
	// Entries returns the prompts, oldest first.
	Entries() []string
	// Add appends a prompt and enforces the bounds.
	Add(prompt string) error
	// SetBounds sets the bounds session.started advises.
	SetBounds(maxBytes int64, maxItems int)
}

// ServerStarted says a server process is running: the app sends
// initialize, then session.start (resuming its current session after a
// restart).
type ServerStarted struct{}

// ServerEvent is one decoded event, in arrival order.
type ServerEvent struct{ Event protocol.Event }

// ServerProblem is a non-JSON line, an undecodable or unknown event, or
// the process exiting.
type ServerProblem struct {
	Err error
	// Exited says the process is gone: the app shows the message, keeps
	// the input, and offers a restart.
	Exited bool
}

// ClientName is the client name sent in initialize; queue entries this
// client submits carry it as submitter.
const ClientName = "scv-tui"

// ProtocolVersion is the protocol version the TUI asks for: 4, so that
// session.started lists the MCP servers (/mcp) and an approval answered by
// another client of the session closes the dialog (approval.resolved).
const ProtocolVersion = protocol.Version4

// phase is where the connection is.
type phase int

const (
	disconnected phase = iota // no server, or it exited
	initializing              // initialize sent
	starting                  // session.start sent
	ready                     // a session is open
)

// reqKind is what a request was, to read its answer or error.
type reqKind int

const (
	reqInitialize reqKind = iota
	reqSessionStart
	reqTurnStart
	reqTurnCancel
	reqApproval
	reqClear
	reqCompact
	reqList
	reqPause
	reqQueueUpdate
	reqQueueMove
	reqQueueRemove
	reqRules
	reqRevoke
	reqAttach
	reqModels
	reqSetModel
)

// request is a sent request awaiting its answer.
type request struct {
	kind   reqKind
	prompt string // turn.start, queue.update: the text, to restore on refusal
	shown  string // turn.start: the prompt as the transcript shows it, when not prompt
	resume string // session.start: the session it resumes
	key    string // rule.revoke: the rule's key
	// switching marks a /resume from an open session.
	switching bool
	dialog    *approval.Dialog
}

// maxPending bounds the requests remembered; answers to older ones are
// read as answers to unknown requests.
const maxPending = 4096

// Model is the TUI's Bubble Tea model.
type Model struct {
	opts Options
	st   styles.Styles
	now  func() time.Time

	width, height int

	transcript *transcript.Transcript
	editor     *editor.Editor
	queue      queue.Panel
	dialog     *approval.Dialog
	dialogRows int // the rows layout gave the dialog
	picker     *picker.Picker
	// modelPicker is the open /model picker.
	modelPicker *picker.Models
	mcpView     *mcpview.View // the open /mcp view
	help        bool

	phase     phase
	nextID    uint64
	pending   map[string]request
	order     []string // pending ids, oldest first, for the bound
	sessionID string
	resumeID  string // the session to resume on the next session.start
	model     string
	// provider and price are the configured provider of model and the
	// model's price (v4; "" and nil from older servers or without one).
	provider string
	price    *protocol.Price
	// spends are the session's tokens by model, for /cost's money.
	spends []spend
	// mcpServers are the MCP servers session.started listed (v4): what
	// /mcp shows.
	mcpServers []protocol.MCPServer
	demo       bool
	cwd        string
	ctxMax     int64
	ctxUsed    int64
	lastSeq    uint64
	warning    string               // seq gap or duplicate: shown in the status bar
	problem    string               // server problem: shown above the editor, restart offered
	hello      *protocol.Initialize // the initialize sent to the running server
	restarts   int                  // restarts in progress

	turnID     string
	turnReq    string
	turnStart  time.Time
	turnState  string // "" when idle
	compacting bool
	dequeued   map[string]string // request id → prompt as dequeued

	editing   *protocol.QueueEntry // the queue entry being edited, if any
	reasonFor *approval.Dialog     // the approval a denial reason is being typed for, if any
	draft     string               // the editor's text before editing began

	helpScroll  int             // the first line of the help shown
	usage       protocol.Usage  // the session's token totals (a resumed session's from before too)
	turnsDone   int             // turns completed in this view of the session
	retrying    string          // the running turn's last turn.retrying, until the model answers
	files       *complete.Index // the workspace's files for @ mentions, built on the first "@"
	fileWord    string          // the "@" word fileHits match
	fileHits    []string        // its matches
	quitArmed   bool
	quitArmedAt time.Time // when Ctrl+C interrupted a turn; zero when it armed on an idle prompt
	flash       string    // a one-line message that the next key clears

	// overflow records that the last frame's parts were taller than the
	// screen and its top was cut (only a tiny terminal should do that).
	overflow bool

	tickGen uint64
	ticking bool
	frame   int

	// attachID is the daemon session to attach to (again, after a
	// Ctrl+R) instead of a session.start; live are the sessions the last
	// session.list named open in the daemon (attach.go).
	attachID string
	live     map[string]bool
}

// Themes for Options.Theme (SCV_THEME).
const (
	ThemeDark  = "dark"
	ThemeLight = "light"
)

// setStyles switches every part of the view to st.
func (m *Model) setStyles(st styles.Styles) {
	m.st = st
	m.transcript.SetStyles(st, markdown.New(st.MarkdownStyle))
}

// New returns the model. It does nothing until ServerStarted arrives.
func New(opts Options) *Model {
	st := styles.For(opts.Theme != ThemeLight)
	m := &Model{
		opts:       opts,
		st:         st,
		now:        time.Now,
		width:      80,
		height:     24,
		transcript: transcript.New(st, markdown.New(st.MarkdownStyle)),
		editor:     editor.New(8),
		pending:    make(map[string]request),
		dequeued:   make(map[string]string),
		resumeID:   opts.Resume,
		attachID:   opts.Attach,
	}
	if opts.History != nil {
		m.editor.SetHistory(opts.History.Entries())
	}
	m.layout()
	return m
}

// Init implements tea.Model.
// It asks the terminal for its background colour, to pick the styles
// (BackgroundColorMsg), unless Options.Theme chose them.
func (m *Model) Init() tea.Cmd {
	if m.opts.Theme != "" {
		return nil
	}
	return tea.RequestBackgroundColor
}

// Update implements tea.Model.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.BackgroundColorMsg:
		if m.opts.Theme == "" {
			m.setStyles(styles.For(msg.IsDark()))
		}
		return m, nil
	case tea.WindowSizeMsg:
		m.width, m.height = max(msg.Width, 1), max(msg.Height, 1)
		m.layout()
		return m, nil
	case ServerStarted:
		return m, m.serverStarted()
	case ServerEvent:
		if msg.Event == nil {
			return m, nil
		}
		return m, m.event(msg.Event)
	case ServerProblem:
		m.serverProblem(msg)
		return m, nil
	case restartDone:
		m.restarts = max(m.restarts-1, 0)
		if msg.err != nil {
			m.setProblem("The server could not be restarted: " + msg.err.Error() + ". Press Ctrl+R to try again; the server's log is " + m.logPath() + ".")
		}
		return m, nil
	case tickMsg:
		return m, m.tick(msg)
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case tea.PasteMsg:
		if m.dialog == nil && m.picker == nil && m.modelPicker == nil && m.mcpView == nil {
			m.help = false
			m.editor.Insert(msg.Content)
			m.layout()
		}
		return m, nil
	case tea.MouseWheelMsg:
		switch msg.Mouse().Button {
		case tea.MouseWheelUp:
			m.transcript.ScrollUp(3)
		case tea.MouseWheelDown:
			m.transcript.ScrollDown(3)
		}
		return m, nil
	}
	return m, nil
}

// restartDone reports the end of Options.Restart.
type restartDone struct{ err error }

// tickMsg turns the spinner and updates the elapsed time.
type tickMsg struct{ gen uint64 }

const tickEvery = 100 * time.Millisecond

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// startTicking starts the spinner unless it runs.
func (m *Model) startTicking() tea.Cmd {
	if m.ticking {
		return nil
	}
	m.ticking = true
	m.tickGen++
	gen := m.tickGen
	return tea.Tick(tickEvery, func(time.Time) tea.Msg { return tickMsg{gen} })
}

func (m *Model) tick(t tickMsg) tea.Cmd {
	if t.gen != m.tickGen || !m.ticking {
		return nil // a tick of an older loop
	}
	if m.turnState == "" {
		m.ticking = false
		return nil
	}
	m.frame++
	m.transcript.SetFrame(spinner[m.frame%len(spinner)])
	gen := m.tickGen
	return tea.Tick(tickEvery, func(time.Time) tea.Msg { return tickMsg{gen} })
}

// restart asks the wire layer for a new server, off the update loop.
func (m *Model) restart() tea.Cmd {
	if m.opts.Restart == nil {
		m.flash = "This build cannot restart the server; quit and start scv-tui again."
		return nil
	}
	m.restarts++
	m.phase = disconnected
	m.clearProblem()
	m.warning = ""
	m.flash = "Restarting the server…"
	m.endTurn()
	restart := m.opts.Restart
	return func() tea.Msg { return restartDone{err: restart()} }
}

func (m *Model) logPath() string {
	if m.opts.LogPath == "" {
		return "not kept"
	}
	return m.opts.LogPath
}
