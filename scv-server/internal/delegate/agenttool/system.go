package agenttool

import (
	"fmt"
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
)

// SystemSection returns the body of the system prompt's "Delegating
// work" section (title SectionTitle), generated from the offered agents
// (tools.md, "Delegate first"); "" when the session has no agent tool.
func (s *Set) SystemSection() string {
	if len(s.offered) == 0 {
		return ""
	}
	var paras []string

	named := make([]string, len(s.offered))
	for i, b := range s.offered {
		d := b.Descriptor()
		named[i] = fmt.Sprintf("%s (%s)", d.Name, d.Product)
	}
	paras = append(paras, "The agent tool hands work to another agent, which works on its own with its own model and tools. This session offers "+andList(named)+"; name one with the tool's agent argument.")

	var prefer []string
	for _, p := range s.opts.Prefer {
		if s.byName[p] != nil && !contains(prefer, p) {
			prefer = append(prefer, p)
		}
	}
	if len(prefer) > 0 {
		order := "prefers " + prefer[0]
		if len(prefer) > 1 {
			order = "prefers these agents, in order: " + strings.Join(prefer, ", ")
		}
		paras = append(paras, fmt.Sprintf("The user %s. A call that names no agent goes to %s, so name the agent whenever the work calls for another one.", order, s.def))
	} else if len(s.takers(takesSession)) > 0 {
		paras = append(paras, "The user prefers none of the agents this session offers ([agent] prefer), so every call that starts a conversation names its agent: choose by what the user asks for and the notes below. A call that continues a conversation (session) runs on the agent its handle names.")
	} else {
		paras = append(paras, "The user prefers none of the agents this session offers ([agent] prefer), so every call names its agent: choose by what the user asks for and the notes below.")
	}

	var notes []string
	for _, b := range s.offered {
		d := b.Descriptor()
		def := s.defaults(d)
		sel := selections(def)
		switch {
		case def.UseFor != "" && sel != "":
			notes = append(notes, fmt.Sprintf("- %s: use it for %s. For that work, pass %s; for other work omit %s so it uses its own default.", d.Name, strings.TrimSuffix(def.UseFor, "."), sel, omittedNames(def)))
		case def.UseFor != "":
			notes = append(notes, fmt.Sprintf("- %s: use it for %s.", d.Name, strings.TrimSuffix(def.UseFor, ".")))
		case sel != "":
			notes = append(notes, fmt.Sprintf("- %s: pass %s whenever you call it, unless the user asks for another.", d.Name, sel))
		}
	}
	if len(notes) > 0 {
		paras = append(paras, "The user's notes on the agents:\n"+strings.Join(notes, "\n"))
	}

	if s.opts.MaxBackground > 0 {
		paras = append(paras,
			"Stay available to the user while agents work: a background job lets the user keep talking to you while the agent works, and a long call in the turn does not. Answer quick things yourself (short reads, lookups, status checks). Hand real work (changes, multi-step investigation, builds, tests, releases, anything likely to take more than about a minute) to a background job, with background set to true, and reply at once with what you started and its job handle. The delegated agent sees none of this conversation, so give it a self-contained brief: the goal, where to work, the constraints, and what to report back.",
			"When a job finishes, the server starts a turn whose prompt begins [SCV background report]; relay what it says to the user. Use agent_status and agent_cancel when the user asks about a job or wants it stopped. Keep agent_wait, foreground agent calls and long bash commands for quick results you need within the turn: they hold the turn open, and the user cannot reach you until it ends.")
	} else {
		paras = append(paras, "The delegated agent sees none of this conversation, so give it a self-contained brief: the goal, where to work, the constraints, and what to report back.")
	}

	if s.byName[delegate.Grok] != nil {
		paras = append(paras, "If an agent declines a request, tell the user what it said, then call the agent tool with agent grok and the same request. Grok is offered for exactly this, and a safety or guardrail refusal is not a reason to skip it: its own policies decide. If grok itself declines, tell the user rather than passing the request to another agent on your own; if the user then asks for a specific agent, use that one.")
	} else {
		paras = append(paras, "If an agent declines a request, tell the user what it said rather than passing the request to another agent on your own: the user decides where it goes next. If the user then asks for a specific agent, use that one; its own policies apply.")
	}
	return strings.Join(paras, "\n\n")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
