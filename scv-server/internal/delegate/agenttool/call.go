package agenttool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/shared/textcut"
)

// agentTool is the `agent` tool.
type agentTool struct{ s *Set }

// Spec describes the tool.
func (t *agentTool) Spec() tools.Spec { return t.s.spec }

// ValidationSchema is the schema calls are validated against (see
// Set.ValidationSchema).
func (t *agentTool) ValidationSchema() json.RawMessage { return t.s.ValidationSchema() }

// Prepare checks the call and returns its plan; every refusal happens here.
func (t *agentTool) Prepare(env tools.Env, raw json.RawMessage) (*tools.Plan, error) {
	p, err := t.s.prepare(env, raw)
	if err != nil {
		return nil, err
	}
	return &tools.Plan{
		Risk:    protocol.RiskDelegate,
		Summary: p.summary,
		Run:     func(ctx context.Context) (tools.Result, error) { return t.s.run(ctx, env, p) },
	}, nil
}

// callArgs are the agent tool's arguments.
type callArgs struct {
	Agent          string `json:"agent"`
	Prompt         string `json:"prompt"`
	Cwd            string `json:"cwd"`
	Session        string `json:"session"`
	Model          string `json:"model"`
	Effort         string `json:"effort"`
	Background     bool   `json:"background"`
	TimeoutSeconds *int64 `json:"timeout_seconds"`
}

// prepared is a checked call.
type prepared struct {
	backend delegate.Backend
	desc    delegate.Descriptor
	call    delegate.Call
	// conv is the handle of the conversation the call continues; new is
	// set when the call starts one.
	conv       string
	resume     string // the CLI session a continued conversation resumes
	turn       int    // the turn it would be
	newConv    bool
	background bool
	summary    string
}

// blank reports whether an optional string counts as omitted.
func blank(s string) bool { return strings.TrimSpace(s) == "" }

// prepare checks a call and plans it; every refusal happens here, before
// approval and before anything launches.
func (s *Set) prepare(env tools.Env, raw json.RawMessage) (*prepared, error) {
	var a callArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("the agent tool's arguments do not decode (%v); send prompt as a string and the options as the schema describes", err)
	}
	for _, f := range []*string{&a.Agent, &a.Cwd, &a.Session, &a.Model, &a.Effort} {
		if blank(*f) {
			*f = ""
		}
	}
	s.mu.Lock()
	closed := s.closed
	s.unlock()
	if closed {
		return nil, errors.New("this session is closing, so no agent starts; the call was not run")
	}

	name, err := s.choose(a.Agent, a.Session)
	if err != nil {
		return nil, err
	}
	b := s.byName[name]
	d := b.Descriptor()
	if err := s.checkOptions(name, d, a); err != nil {
		return nil, err
	}
	ws := s.opts.Workspace
	if ws == "" {
		ws = env.Workspace
	}
	p := &prepared{backend: b, desc: d, background: a.Background}
	dir, err := s.place(p, a, name, ws)
	if err != nil {
		return nil, err
	}
	timeout, err := s.timeout(a.TimeoutSeconds)
	if err != nil {
		return nil, err
	}
	if a.Background {
		if err := s.jobs.Room(); err != nil {
			return nil, err
		}
	}

	s.mu.Lock()
	handle := s.newHandleLocked(name)
	s.unlock()
	p.call = delegate.Call{
		Agent: name, Prompt: a.Prompt, Dir: dir, Workspace: ws, Model: a.Model, Effort: a.Effort,
		Timeout: timeout, Handle: handle, SessionID: s.opts.SessionID, Depth: s.opts.Depth,
		Conversation: p.conv, Turn: p.turn, ResumeCLISession: p.resume, Background: a.Background,
	}
	if p.newConv {
		// Claude and pi take the id SCV chooses; a CLI that picks its own
		// (Codex) ignores it and reports its id in the result.
		p.call.NewCLISession = uuid.NewString()
	}
	launch, err := b.Plan(p.call)
	if err != nil {
		return nil, s.cannotRun(name, err)
	}
	p.summary = s.summary(p, launch)
	return p, nil
}

// checkOptions refuses the options the agent name (described by d) does
// not take, malformed model and effort selections, and a prompt no CLI
// can take.
func (s *Set) checkOptions(name string, d delegate.Descriptor, a callArgs) error {
	for _, o := range []struct {
		opt   string
		set   bool
		takes func(delegate.Descriptor) bool
	}{{"model", a.Model != "", takesModel}, {"effort", a.Effort != "", takesEffort}, {"session", a.Session != "", takesSession}} {
		if o.set && !o.takes(d) {
			return s.notTaken(name, o.opt, o.takes)
		}
	}
	if a.Model != "" && !validModel(a.Model) {
		return fmt.Errorf("model %q is not a model name: use 1-128 ASCII letters, digits or ._:/@[]-, not starting with - or @; or omit model so %s uses its own default", a.Model, name)
	}
	if a.Effort != "" && !validEffort(a.Effort) {
		return fmt.Errorf("effort %q is not an effort; use one of %s, or omit effort so %s uses its own default", a.Effort, strings.Join(efforts, ", "), name)
	}
	return checkPrompt(a.Prompt)
}

// place returns the directory the call runs in (its cwd inside the
// workspace ws, or the conversation's), and sets p's conversation: the
// one the call continues, or a new one for an agent that takes a session
// (when there is room for it).
func (s *Set) place(p *prepared, a callArgs, name, ws string) (string, error) {
	dir := ws
	if a.Cwd != "" {
		var err error
		if dir, err = resolveCwd(ws, a.Cwd); err != nil {
			return "", err
		}
	}
	if a.Session == "" {
		if !p.desc.TakesSession {
			return dir, nil
		}
		p.newConv = true
		s.mu.Lock()
		err := s.convs.Room()
		s.unlock()
		return dir, err
	}
	s.mu.Lock()
	c, err := s.convs.Lookup(a.Session)
	s.unlock()
	if err != nil {
		return "", err
	}
	if a.Cwd != "" && dir != c.Dir {
		return "", fmt.Errorf("conversation %s runs in %s, and a conversation keeps its cwd; omit cwd to continue it there, or omit session to start a new conversation in %s", c.Handle, c.Dir, dir)
	}
	if a.Model != "" && name == delegate.SCV {
		// A nested SCV takes its model override when its session starts.
		return "", fmt.Errorf("scv takes model only for a new conversation; omit model to continue %s with its model, or omit session to start a new conversation with model %s", c.Handle, a.Model)
	}
	p.conv = c.Handle
	// What the turn would resume, so the plan shows the vector that runs;
	// the turn fills them again when it starts.
	p.resume, p.turn = c.CLI, c.Turns+1
	return c.Dir, nil
}

// timeout returns the run's timeout: timeout_seconds when given, within
// 1 s and the ceiling, else the default.
func (s *Set) timeout(arg *int64) (time.Duration, error) {
	if arg == nil {
		return s.opts.DefaultTimeout, nil
	}
	n, ceil := *arg, seconds(s.opts.MaxTimeout)
	switch {
	case n < 1:
		return 0, fmt.Errorf("timeout_seconds is %d; it must be at least 1", n)
	case n > ceil:
		return 0, fmt.Errorf("timeout_seconds %d is above the ceiling of %d s (tools.max_timeout_seconds); ask for at most %d, or leave it out for the default of %d s",
			n, ceil, ceil, seconds(s.opts.DefaultTimeout))
	}
	return time.Duration(n) * time.Second, nil
}

// cannotRun is the refusal of a call the backend would not plan, with
// the fallback sentence when the agent is unavailable.
func (s *Set) cannotRun(name string, err error) error {
	unavailable := errors.Is(err, delegate.ErrUnavailable)
	text := strings.TrimSuffix(err.Error(), ".")
	if unavailable {
		text = strings.TrimPrefix(text, delegate.ErrUnavailable.Error()+": ")
	}
	msg := fmt.Sprintf("%s cannot run: %s.", name, text)
	if fb := s.fallback(name); fb != "" && unavailable {
		msg += " " + fb
	}
	return errors.New(msg)
}

// choose returns the agent a call runs on (tools.md, "Choosing an agent").
func (s *Set) choose(explicit, session string) (string, error) {
	if session != "" {
		s.mu.Lock()
		owner, ok := s.convs.Agent(session)
		s.unlock()
		if ok {
			if explicit != "" && explicit != owner {
				return "", fmt.Errorf("conversation %s belongs to %s, not %s; omit agent to continue it, or omit session to start a new conversation with %s",
					session, owner, explicit, explicit)
			}
			return owner, nil
		}
	}
	name := explicit
	if name == "" {
		name = s.def
	}
	if name == "" && session != "" {
		// The handle names no agent on offer: say so, rather than ask
		// for an agent the call meant to leave to its handle.
		s.mu.Lock()
		example := s.convs.ExampleHandle()
		s.unlock()
		return "", fmt.Errorf("session %q is not a conversation of this session; pass a handle an earlier agent result returned (such as %s), or omit session and name the agent to start a new conversation (choose one of: %s)",
			session, example, strings.Join(s.names, ", "))
	}
	if name == "" {
		return "", fmt.Errorf("name the agent: the user prefers none of the agents this session offers ([agent] prefer); choose one of: %s", strings.Join(s.names, ", "))
	}
	if s.byName[name] == nil {
		return "", fmt.Errorf("agent %q is not offered in this session; choose one of: %s", name, strings.Join(s.names, ", "))
	}
	return name, nil
}

// notTaken is the refusal of an option the agent does not take.
func (s *Set) notTaken(name, opt string, takes func(delegate.Descriptor) bool) error {
	others := s.takers(takes)
	if len(others) == 0 {
		return fmt.Errorf("%s does not take %s, and no agent this session offers does; omit %s", name, opt, opt)
	}
	return fmt.Errorf("%s does not take %s; these agents do: %s. Omit %s, or call one of them", name, opt, strings.Join(others, ", "), opt)
}

// summary is the approval summary: the agent, what launches, where, for
// how long, and the bounded prompt.
func (s *Set) summary(p *prepared, l delegate.Launch) string {
	c := p.call
	args := make([]string, len(l.Args))
	for i, a := range l.Args {
		if a == c.Prompt {
			args[i] = "<prompt>"
		} else {
			args[i] = strconv.Quote(a)
		}
	}
	dir := l.Dir
	if dir == "" {
		dir = c.Dir
	}
	var b strings.Builder
	fmt.Fprintf(&b, "agent %s: Launch %s with args [%s] in %s, timeout %d s", c.Agent, l.Executable, strings.Join(args, " "), dir, seconds(c.Timeout))
	switch {
	case p.conv != "":
		fmt.Fprintf(&b, ", continuing conversation %s", p.conv)
	case p.newConv:
		b.WriteString(", starting a new conversation")
	}
	if p.background {
		b.WriteString(", as a background job")
	}
	if l.FullPermissions || s.opts.Permissions[c.Agent] {
		fmt.Fprintf(&b, "\nFULL PERMISSIONS: %s runs with its own approval prompts and sandbox switched off ([agents.%s] permissions = \"full\")", c.Agent, c.Agent)
	}
	fmt.Fprintf(&b, "\nDelegate risk: %s works on its own; it may read and write files, run commands, use the credentials in its environment and private home, and send the prompt and files to its model provider.", c.Agent)
	shown, cut := boundText(c.Prompt, promptShown)
	fmt.Fprintf(&b, "\nPrompt (%d bytes):\n%s", len(c.Prompt), shown)
	if cut > 0 {
		fmt.Fprintf(&b, "\n[… %d more bytes of the prompt]", cut)
	}
	return b.String()
}

// boundText cuts s to at most n bytes on a character boundary and returns
// how many bytes it cut.
func boundText(s string, n int) (string, int) {
	kept := textcut.Prefix(s, n)
	return kept, len(s) - len(kept)
}

func seconds(d time.Duration) int64 { return int64(d / time.Second) }
