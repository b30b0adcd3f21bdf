package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/picker"
	"github.com/scv-cli/scv/scv-tui/internal/ui/status"
	"github.com/scv-cli/scv/scv-tui/internal/ui/transcript"
)

// moreCommand runs the slash commands of issue 21's later items (/model,
// /init); it reports whether name was one of them.
func (m *Model) moreCommand(name, arg string, done func()) bool {
	switch name {
	case "/model":
		if !m.needSession() {
			return true
		}
		if arg != "" {
			// "/model NAME" keeps the provider; "/model PROVIDER NAME"
			// names it (model ids hold no spaces, but may hold / and :).
			set := &protocol.SetModel{RequestID: m.newID(), SessionID: m.sessionID, Model: arg}
			if prov, model, ok := strings.Cut(arg, " "); ok {
				set.Provider, set.Model = prov, strings.TrimSpace(model)
			}
			if m.send(set, request{kind: reqSetModel}) {
				done()
			}
			return true
		}
		if m.send(&protocol.SessionModels{RequestID: m.newID(), SessionID: m.sessionID}, request{kind: reqModels}) {
			done()
			m.flash = "Asking the server for the models…"
		}
	case "/init":
		if !m.needSession() {
			return true
		}
		m.initAgents(arg, done)
	default:
		return false
	}
	return true
}

// sessionModel applies session.model: the answer to /model opens the
// picker; the answer to a switch updates the status bar and says so.
func (m *Model) sessionModel(e *protocol.SessionModel) {
	r, _ := m.take(e.RequestID)
	if e.SessionID != m.sessionID {
		return
	}
	m.model, m.ctxMax = e.Model, e.ContextMaxTokens
	if e.Provider != "" {
		m.provider, m.price = e.Provider, e.Price
	}
	if r.kind == reqModels {
		m.flash = ""
		choices := make([]picker.Choice, 0, len(e.Models))
		for _, mi := range e.Models {
			choices = append(choices, picker.Choice{ID: mi.ID, Provider: mi.Provider, Unavailable: mi.Unavailable, Label: modelLabel(mi)})
		}
		m.modelPicker = picker.NewModels(choices, e.Model, e.Provider)
		return
	}
	of := ""
	if e.Provider != "" {
		of = " of " + e.Provider
	}
	m.transcript.AddNotice(transcript.Info, fmt.Sprintf("The session now uses %s%s (context window %s tokens) for every model request, until you switch again or quit; a resumed session starts on the configured model.", e.Model, of, status.Tokens(e.ContextMaxTokens)))
}

// modelLabel is a /model picker row: the model, its context window and
// its configured price.
func modelLabel(mi protocol.ModelInfo) string {
	label := fmt.Sprintf("%s · %s-token context window", mi.ID, status.Tokens(mi.ContextMaxTokens))
	if mi.Price != nil {
		label += fmt.Sprintf(" · $%g/$%g per M tokens", mi.Price.InputPerMTok, mi.Price.OutputPerMTok)
	}
	return label
}

// modelPickerKey moves in the /model picker, switches to the chosen model
// or closes the picker.
func (m *Model) modelPickerKey(ks string) {
	switch ks {
	case "up", "k":
		m.modelPicker.Move(-1)
	case "down", "j":
		m.modelPicker.Move(1)
	case "enter":
		c, ok := m.modelPicker.Chosen()
		m.modelPicker = nil
		if !ok {
			m.flash = "The model is unchanged."
			return
		}
		// An unavailable model is asked for all the same: the server's
		// refusal says which variable to set and where.
		m.send(&protocol.SetModel{RequestID: m.newID(), SessionID: m.sessionID, Model: c.ID, Provider: c.Provider}, request{kind: reqSetModel})
	case "esc", "q":
		m.modelPicker = nil
	}
}

// agentsFile is the instructions file /init writes.
const agentsFile = "AGENTS.md"

// initPrompt asks the model to write a starting AGENTS.md.
const initPrompt = `Write a starting AGENTS.md for this workspace, the instructions file coding agents read before they work here. Look before you write: list the top-level files and directories, read the build files (go.mod, package.json, Makefile, Cargo.toml, pyproject.toml or whatever is there), the README and the CI configuration, and try the commands you find when they are cheap. Then create AGENTS.md at the workspace root with the write tool in mode "create" (which refuses a file that exists), in short Markdown sections:
- Build, test and lint: the exact commands, including how to run one test.
- Layout: the main directories and what lives in each.
- Conventions: code style, error handling, naming, commit messages, what to avoid, as the code shows them.
- Anything surprising a newcomer would trip on.
Keep it under about 80 lines, state only what you found (no guesses, no generic advice), and do not overwrite an AGENTS.md that exists by the time you write: if one appears, stop and tell me.`

// updatePrompt asks the model to revise an existing AGENTS.md.
const updatePrompt = `Review the AGENTS.md at the workspace root against the workspace as it is now: list the files, read the build files, README and CI configuration, and check its build, test and lint commands. Then edit AGENTS.md with the edit tool: correct what is wrong, add what is missing (commands, layout, conventions), keep what is right and the owner's own notes. Keep it short and state only what you found.`

// initAgents is /init: it sends a built-in prompt asking the model to write
// AGENTS.md. An existing one is never overwritten without asking: /init
// then explains, and "/init update" asks the model to revise it (the edit
// still goes through the approval with its diff).
func (m *Model) initAgents(arg string, done func()) {
	path := filepath.Join(m.workspace(), agentsFile)
	_, err := os.Lstat(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		m.flash = fmt.Sprintf("Cannot check for %s: %v.", path, err)
		return
	}
	prompt, shown := initPrompt, "/init: write a starting AGENTS.md for this workspace"
	switch {
	case arg == "update" && exists:
		prompt, shown = updatePrompt, "/init update: revise AGENTS.md"
	case arg == "update":
		m.flash = "There is no AGENTS.md to update yet; /init writes one."
		return
	case arg != "":
		m.flash = "/init takes no argument but update (/init update revises an existing AGENTS.md)."
		return
	case exists:
		done()
		m.transcript.AddNotice(transcript.Warn, fmt.Sprintf("%s already exists, so /init leaves it alone. /init update asks the model to revise it; its edit shows the diff and waits for your approval.", path))
		return
	}
	if m.send(&protocol.TurnStart{RequestID: m.newID(), SessionID: m.sessionID, Prompt: prompt}, request{kind: reqTurnStart, prompt: strings.TrimSpace("/init " + arg), shown: shown}) {
		done()
	}
}
