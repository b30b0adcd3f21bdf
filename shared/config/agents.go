package config

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/scv-cli/scv/shared/delegate/adapters"
)

// AgentOptions says which selections a delegated agent takes, for
// validating [agents.<name>] and agent.prefer.
type AgentOptions struct {
	Model, Effort bool
}

// KnownAgent is a delegated agent SCV knows and the selections it takes.
type KnownAgent struct {
	Name string
	AgentOptions
}

// KnownAgents are the delegated agents SCV knows, in the order it offers
// them: the adapter table's agents (the configuration reads the table,
// which sits below it in shared's layers), then the nested SCV.
var KnownAgents = knownAgents()

func knownAgents() []KnownAgent {
	var out []KnownAgent
	for _, a := range adapters.All() {
		out = append(out, KnownAgent{a.Name, AgentOptions{Model: a.TakesModel(), Effort: a.TakesEffort()}})
	}
	// The nested SCV is no CLI of the adapter table, but is configured
	// like one: it takes a model, not an effort.
	return append(out, KnownAgent{"scv", AgentOptions{Model: true}})
}

// AgentNames returns the names of KnownAgents.
func AgentNames() []string {
	names := make([]string, len(KnownAgents))
	for i, a := range KnownAgents {
		names[i] = a.Name
	}
	return names
}

func knownAgent(name string) (AgentOptions, bool) {
	for _, a := range KnownAgents {
		if a.Name == name {
			return a.AgentOptions, true
		}
	}
	return AgentOptions{}, false
}

// Efforts are the values an effort selection may take.
var Efforts = adapters.Efforts

// ValidModel reports whether m is a model selection SCV passes on: 1-128
// ASCII letters, digits or `._:/@[]-`, not starting with `-` or `@`
// (adapters.ValidateModel).
func ValidModel(m string) bool { return adapters.ValidateModel(m) == nil }

// maxUseFor bounds agents.<name>.use_for.
const maxUseFor = 500

// validateAgents checks agent.prefer and every [agents.<name>] table.
func (v *validator) validateAgents() {
	c := v.c
	names := AgentNames()
	seen := map[string]bool{}
	for _, p := range c.Agent.Prefer {
		switch {
		case !slices.Contains(names, p):
			v.fail("agent.prefer", "names %q, which is not an agent SCV knows; use %s", p, quoteList(names, "or"))
		case seen[p]:
			v.fail("agent.prefer", "names %q twice; list each agent once, in the order you prefer them", p)
		}
		seen[p] = true
	}
	for _, name := range slices.Sorted(maps.Keys(c.Agents)) {
		a := c.Agents[name]
		k := func(field string) string { return joinKey([]string{"agents", name, field}) }
		opts, ok := knownAgent(name)
		if !ok {
			v.fail(joinKey([]string{"agents", name}), "configures %q, which is not an agent SCV knows; use one of %s", name, quoteList(names, "or"))
			continue
		}
		if len(a.UseFor) > maxUseFor {
			v.fail(k("use_for"), "is %d bytes long; keep it to one line of at most %d bytes", len(a.UseFor), maxUseFor)
		} else if strings.ContainsAny(a.UseFor, "\r\n") {
			v.fail(k("use_for"), "has a line break; write the note on one line")
		}
		if a.Model != "" {
			switch {
			case !opts.Model:
				v.fail(k("model"), "is set, but %s does not take a model selection; remove it", name)
			case !ValidModel(a.Model):
				v.fail(k("model"), "is %q, which is not a model name: use 1-128 letters, digits or ._:/@[]- not starting with - or @", a.Model)
			}
		}
		if a.Effort != "" {
			switch {
			case !opts.Effort:
				v.fail(k("effort"), "is set, but %s does not take an effort selection; remove it", name)
			default:
				v.oneOf(k("effort"), a.Effort, Efforts, "an effort")
			}
		}
		if a.Permissions != "" {
			v.oneOf(k("permissions"), a.Permissions, []string{"full"}, "a permissions setting (leave it unset for the agent's own settings)")
		}
		v.validateAgentRun(name, a, k)
	}
}

// acpAgents are the agents with an ACP server (tools.md, "Agent Client
// Protocol transport"): pi has only a community adapter, and the nested
// SCV speaks SCV's own protocol.
var acpAgents = []string{adapters.Claude, adapters.Codex, adapters.Grok, adapters.DSH}

// validateAgentRun checks agents.<name>.transport and .command.
func (v *validator) validateAgentRun(name string, a AgentSettings, k func(string) string) {
	if a.Transport != "" {
		switch {
		case name == "scv":
			v.fail(k("transport"), "is set, but the nested SCV always runs one `scv server --stdio` per conversation; remove it")
		case a.Transport == TransportACP && !slices.Contains(acpAgents, name):
			v.fail(k("transport"), "is \"acp\", but %s has no ACP server SCV runs; use \"resume\" or remove it", name)
		default:
			v.oneOf(k("transport"), a.Transport, []string{TransportAuto, TransportACP, TransportResume}, "a transport")
		}
	}
	if a.Command == "" {
		return
	}
	switch {
	case name == "scv":
		v.fail(k("command"), "is set, but the nested SCV runs this installation's scv; remove it")
	case strings.TrimSpace(a.Command) != a.Command || strings.ContainsAny(a.Command, "\x00\r\n"):
		v.fail(k("command"), "has leading or trailing spaces or a line break; give the program alone")
	case strings.Contains(a.Command, "/") && !filepath.IsAbs(a.Command):
		v.fail(k("command"), "is %q, a relative path; give an absolute path or a program name looked up like the built-in one", a.Command)
	case a.Transport == TransportACP:
		v.fail(k("command"), "is set with transport = \"acp\", but the ACP server does not run a custom CLI; remove one of them")
	}
}
