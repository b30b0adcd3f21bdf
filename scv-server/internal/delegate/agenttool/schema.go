package agenttool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/jobs"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/delegate/adapters"
)

// field is one member of an ordered JSON object.
type field struct {
	key string
	val any
}

// object is a JSON object that keeps its members' order, so the schema
// reads agent, prompt, then the options, as a person would write it.
type object []field

// MarshalJSON encodes the members in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.val)
		if err != nil {
			return nil, fmt.Errorf("encoding schema member %s: %w", f.key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encoding a tool schema: %v", err)) // only literals above; a bug
	}
	return b
}

// efforts are the effort values a call may pass.
var efforts = adapters.Efforts

// takers returns the offered agents whose descriptor satisfies takes.
func (s *Set) takers(takes func(delegate.Descriptor) bool) []string {
	var out []string
	for _, b := range s.offered {
		if d := b.Descriptor(); takes(d) {
			out = append(out, d.Name)
		}
	}
	return out
}

func takesModel(d delegate.Descriptor) bool   { return d.TakesModel }
func takesEffort(d delegate.Descriptor) bool  { return d.TakesEffort }
func takesSession(d delegate.Descriptor) bool { return d.TakesSession }

// agentSpec builds the agent tool's description and schema from the
// offered agents (tools.md, "Choosing an agent").
func (s *Set) agentSpec() tools.Spec {
	return tools.Spec{Name: NameAgent, Description: s.toolDescription(), Schema: mustJSON(s.schema(true))}
}

// ValidationSchema is the agent tool's schema without the enum of agents:
// what a registry should validate calls against, so a blank agent (which
// counts as omitted) reaches Prepare, and an agent not on offer gets the
// refusal that lists the ones that are, rather than a schema error.
func (s *Set) ValidationSchema() json.RawMessage { return mustJSON(s.schema(false)) }

func (s *Set) schema(enum bool) object {
	agentProp := object{{"type", "string"}}
	if enum {
		agentProp = append(agentProp, field{"enum", s.names})
	}
	agentProp = append(agentProp, field{"description", s.agentArgDescription()})
	props := object{
		{"agent", agentProp},
		{"prompt", object{{"type", "string"}, {"minLength", 1}, {"description",
			"The brief for the agent. It starts without this conversation, so say what to do and give everything it needs: the goal, the files, directories or commands involved, constraints, and what to report back. It cannot start with \"-\"."}}},
	}
	if m := s.takers(takesModel); len(m) > 0 {
		props = append(props, field{"model", object{{"type", "string"}, {"description",
			"The model the agent uses, in the family its line under agent names. Set it when the user asks for a model, or when the work matches an agent's use_for note that names a model; omit it to leave the agent's own configured default in place. 1-128 ASCII letters, digits or ._:/@[]-, not starting with - or @. Taken by: " + strings.Join(m, ", ") + "."}}})
	}
	if e := s.takers(takesEffort); len(e) > 0 {
		props = append(props, field{"effort", object{{"type", "string"}, {"description",
			"How hard the agent reasons: " + strings.Join(efforts, ", ") + ". Set it when the user asks, or when the work matches an agent's use_for note that names an effort; omit it to leave the agent's own default in place. Taken by: " + strings.Join(e, ", ") + "."}}})
	}
	if c := s.takers(takesSession); len(c) > 0 {
		props = append(props, field{"session", object{{"type", "string"}, {"description",
			"A conversation handle an earlier agent result returned (such as " + c[0] + "-1), to continue that conversation with the agent's own context; the handle names its agent, so agent can be omitted. Omit it to start a new conversation. A conversation keeps its cwd and runs one turn at a time. Taken by: " + strings.Join(c, ", ") + "."}}})
	}
	props = append(props, field{"cwd", object{{"type", "string"}, {"description",
		"The directory the agent runs in: an existing directory inside the workspace, relative to the workspace root or absolute. Running in a project's directory makes the agent pick up that project's AGENTS.md or CLAUDE.md and its skills. Default: the workspace root, or the conversation's directory when continuing one."}}})
	if s.opts.MaxBackground > 0 {
		props = append(props, field{"background", object{{"type", "boolean"}, {"description", fmt.Sprintf(
			"Run the call as a background job: it returns at once with a job handle while the agent works, and the result comes in a later [SCV background report] turn or through agent_wait and agent_status. At most %d jobs run at once.", s.opts.MaxBackground)}}})
	}
	def, ceil := seconds(s.opts.DefaultTimeout), seconds(s.opts.MaxTimeout)
	props = append(props, field{"timeout_seconds", object{{"type", "integer"}, {"minimum", 1}, {"maximum", ceil}, {"description", fmt.Sprintf(
		"Seconds the agent may run before it is stopped (default %d, at most %d); raise it for long work such as builds, releases, or landing a change.", def, ceil)}}})
	// Without a default, agent is needed unless the call continues a
	// conversation: the handle names its agent (claude-1 is claude's),
	// so requiring agent would refuse {"session":"claude-1",...}. Prepare
	// refuses a call with neither.
	required := []string{"prompt"}
	if s.def == "" && len(s.takers(takesSession)) == 0 {
		required = []string{"agent", "prompt"}
	}
	return object{{"type", "object"}, {"properties", props}, {"required", required}, {"additionalProperties", false}}
}

// toolDescription is the agent tool's description.
func (s *Set) toolDescription() string {
	var b strings.Builder
	b.WriteString("Hand work to another agent and get its result. The agent works on its own, in the workspace or cwd, with its own tools and model; it sees none of this conversation, only the prompt. ")
	b.WriteString(`The result is one JSON object: agent, status (completed, failed, declined, timeout or cancelled), reply (the agent's final answer), usage, exit_code, stderr_tail, truncated, and when they apply error, hint (how the user can fix a sign-in), fallback (other agents to try when this one could not run), note (what to do after a decline), and session and turn for a turn of a conversation. `)
	if s.opts.MaxBackground > 0 {
		b.WriteString(`With background true it returns {"job","agent","status":"running","background":true} at once; agent_wait, agent_status and agent_cancel manage the job.`)
	} else {
		b.WriteString("The call holds the turn until the agent finishes.")
	}
	return b.String()
}

// agentArgDescription is the description of the agent argument: how the
// default is chosen, then one line per offered agent.
func (s *Set) agentArgDescription() string {
	var b strings.Builder
	if s.def != "" {
		fmt.Fprintf(&b, "Which agent runs the call. Omitted, it is %s, the first agent of the user's [agent] prefer that this session offers; a call with session runs on the agent its handle names. Name another agent when the user asks for one or the work fits its note below.", s.def)
	} else if len(s.takers(takesSession)) > 0 {
		b.WriteString("Which agent runs the call (required unless session is given: the user prefers none of the agents on offer in [agent] prefer); a call with session runs on the agent its handle names, so agent can be omitted then. Choose by the user's request and the notes below.")
	} else {
		b.WriteString("Which agent runs the call (required: the user prefers none of the agents on offer in [agent] prefer). Choose by the user's request and the notes below.")
	}
	b.WriteString(" Agents:")
	for _, be := range s.offered {
		b.WriteString("\n")
		b.WriteString(s.agentLine(be.Descriptor()))
	}
	return b.String()
}

// agentLine is one agent's line (tools.md, "Choosing an agent").
func (s *Set) agentLine(d delegate.Descriptor) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- %s (%s): %s.", d.Name, d.Product, strings.TrimSuffix(strings.TrimSpace(d.Summary), "."))
	var takes []string
	if d.TakesModel {
		if d.ModelFamily != "" {
			takes = append(takes, "model ("+d.ModelFamily+")")
		} else {
			takes = append(takes, "model")
		}
	}
	if d.TakesEffort {
		takes = append(takes, "effort")
	}
	if d.TakesSession {
		takes = append(takes, "session")
	}
	if len(takes) == 0 {
		b.WriteString(" Takes no model, effort, or session.")
	} else {
		b.WriteString(" Takes " + andList(takes) + ".")
	}
	def := s.defaults(d)
	if def.UseFor != "" {
		b.WriteString(" The user's note on when to use it: " + strings.TrimSuffix(def.UseFor, ".") + ".")
	}
	if sel := selections(def); sel != "" {
		omitted := omittedNames(def)
		if def.UseFor != "" {
			fmt.Fprintf(&b, " For that work, pass %s; omit %s for other work so the agent uses its own default.", sel, omitted)
		} else {
			fmt.Fprintf(&b, " Pass %s whenever you call it, unless the user asks for another.", sel)
		}
	}
	return b.String()
}

// defaults returns the user's notes on the agent, keeping only the
// selections it takes.
func (s *Set) defaults(d delegate.Descriptor) AgentDefaults {
	def := s.opts.Defaults[d.Name]
	def.UseFor = strings.TrimSpace(def.UseFor)
	if !d.TakesModel {
		def.Model = ""
	}
	if !d.TakesEffort {
		def.Effort = ""
	}
	return def
}

// selections is "model X and effort Y", "model X", "effort Y" or "".
func selections(def AgentDefaults) string {
	var sel []string
	if def.Model != "" {
		sel = append(sel, "model "+def.Model)
	}
	if def.Effort != "" {
		sel = append(sel, "effort "+def.Effort)
	}
	return strings.Join(sel, " and ")
}

// omittedNames is "model and effort", "model" or "effort".
func omittedNames(def AgentDefaults) string {
	var n []string
	if def.Model != "" {
		n = append(n, "model")
	}
	if def.Effort != "" {
		n = append(n, "effort")
	}
	return strings.Join(n, " and ")
}

// andList joins items as English: "a", "a and b", "a, b, and c".
func andList(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	case 2:
		return items[0] + " and " + items[1]
	}
	return strings.Join(items[:len(items)-1], ", ") + ", and " + items[len(items)-1]
}

// Job tools' specs.

func (s *Set) waitSpec() tools.Spec {
	def, ceil := seconds(s.opts.DefaultTimeout), seconds(s.opts.MaxTimeout)
	return tools.Spec{
		Name: NameWait,
		Description: `Wait for a background agent job to finish and return {"job","agent","status","elapsed_seconds","result"}, or, when timeout_seconds pass first, "status":"running" with its latest progress line. ` +
			"It holds the turn while it waits and the user cannot reach you meanwhile, so use it only for a result you need within this turn; otherwise the job's result comes in an [SCV background report] turn.",
		Schema: mustJSON(object{{"type", "object"}, {"properties", object{
			{"job", object{{"type", "string"}, {"minLength", 1}, {"description", "The job handle the agent call returned, such as job-1."}}},
			{"timeout_seconds", object{{"type", "integer"}, {"minimum", 1}, {"maximum", ceil}, {"description", fmt.Sprintf("Seconds to wait (default %d, at most %d).", def, ceil)}}},
		}}, {"required", []string{"job"}}, {"additionalProperties", false}}),
	}
}

func (s *Set) statusSpec() tools.Spec {
	return tools.Spec{
		Name: NameStatus,
		Description: `Describe a background agent job, or with no job every job this session remembers as {"jobs":[...]}: running ones with their latest progress line, finished ones with their result. ` +
			fmt.Sprintf("The session remembers its %d newest finished jobs.", jobs.Remembered),
		Schema: mustJSON(object{{"type", "object"}, {"properties", object{
			{"job", object{{"type", "string"}, {"description", "A job handle such as job-1; omit it to list every job."}}},
		}}, {"additionalProperties", false}}),
	}
}

func (s *Set) cancelSpec() tools.Spec {
	return tools.Spec{
		Name: NameCancel,
		Description: `Stop a running background agent job: its agent's processes are stopped, and the job is returned with "status":"cancelled" once it settles (up to 10 seconds). ` +
			"No report turn follows. Use it when the user asks to stop a job. A job that already finished is described with a note.",
		Schema: mustJSON(object{{"type", "object"}, {"properties", object{
			{"job", object{{"type", "string"}, {"minLength", 1}, {"description", "The job handle, such as job-1."}}},
		}}, {"required", []string{"job"}}, {"additionalProperties", false}}),
	}
}
