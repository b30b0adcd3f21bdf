// Package instructions assembles a session's system prompt from its parts,
// in a fixed order: the base instructions (or the user's override), the
// workspace, and the tools on offer. Later features add their sections here.
package instructions

import (
	_ "embed"
	"strings"
)

//go:embed base.md
var base string

// Options are the parts of a system prompt.
type Options struct {
	// Override replaces the base instructions when not empty
	// (agent.system_prompt).
	Override string
	// Workspace is the canonical workspace directory.
	Workspace string
	// Tools are the names of the tools on offer; none for a tool-free
	// session.
	Tools []string
}

// Base returns the built-in base instructions.
func Base() string { return strings.TrimSpace(base) }

// Build returns the system prompt.
func Build(o Options) string {
	var b strings.Builder
	if o.Override != "" {
		b.WriteString(strings.TrimSpace(o.Override))
	} else {
		b.WriteString(Base())
	}
	b.WriteString("\n\n# Workspace\n\nYou are working in ")
	b.WriteString(o.Workspace)
	if len(o.Tools) > 0 {
		b.WriteString(". Paths you give to tools are relative to it; nothing outside it is reachable through the file tools.\n")
	} else {
		b.WriteString(".\n")
	}
	if len(o.Tools) == 0 {
		b.WriteString("\n# Tools\n\nThis session has no tools: answer from the conversation alone.\n")
	} else {
		b.WriteString("\n# Tools\n\nTools on offer: ")
		b.WriteString(strings.Join(o.Tools, ", "))
		b.WriteString(". Some calls need the user's approval; a denied call is final unless the user asks again.\n")
	}
	return b.String()
}
