// Package loop is the agent loop of one turn: it sends the system prompt,
// history and tool schemas to the provider, streams the reply to the client,
// runs the tool calls the reply asks for one at a time through the approval
// gate, feeds the results back, and repeats until the model answers without
// tools or the step limit is reached.
//
// The loop owns no goroutines of its own: Run returns when the turn ends,
// and cancelling its context reaches the provider stream, a running tool and
// an approval wait alike.
package loop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/scv-cli/scv/scv-server/internal/approval"
	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/scv-server/internal/tokens"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/shared/textcut"
)

// Sink receives the events of a turn. Emit fills the event's TurnHeader,
// assigns its sequence number and waits while the client is behind; it
// fails when ctx ends or the event cannot be delivered.
type Sink interface {
	Emit(ctx context.Context, ev protocol.TurnEvent) error
}

// Config is what one turn runs with.
type Config struct {
	Provider provider.Provider
	Model    string
	// Now, when set, gives the provider, model and context window of
	// each request instead of Provider, Model and ContextMaxTokens, so a
	// client's model or provider switch applies from the next request on,
	// within the running turn too (session.Session.SetModel, SetTarget).
	Now    func() Target
	System string
	Tools  *tools.Registry // nil for a tool-free turn
	// HostedWebSearch offers the endpoint's hosted web search with every
	// request (web.search = "provider"); never for a tool-free turn.
	HostedWebSearch bool
	ToolEnv         tools.Env
	// WarmAfter, when above 0, starts the warm-ups of the turn's tools
	// (tools.Warmer) once a model request has gone that long unanswered,
	// so a model's latency hides what their first call would pay (bash:
	// the login profile); a faster answer starts none. Whatever it is, a
	// call that waits for approval warms its tool. DefaultWarmAfter is
	// the sessions'.
	WarmAfter time.Duration
	Policy    approval.Policy
	// PolicyNow, when set, gives the policy at each call instead of
	// Policy, so a client's mode switch applies within the running turn
	// (session.Session.SetPolicy).
	PolicyNow func() approval.Policy
	// OnMessages, when set, is called on the turn's goroutine each time the
	// loop adds messages to the turn (the prompt, an assistant message, a
	// tool result), with just those messages, so that the session can
	// record the turn as it happens. It must not keep or modify the slice.
	OnMessages func([]provider.Message)
	// AutoApprove runs calls the policy would ask about without asking;
	// calls it denies stay denied.
	AutoApprove bool
	Approvals   *approval.Pending
	// Rules enables session approval rules (protocol v3; nil for v1 and v2
	// sessions, which see neither). It returns the session's granted rule
	// that covers a call with the given keys, if any. A call the policy
	// would ask about runs without asking when its plan's keys match a
	// rule, and its tool.started names the rule; a call that asks carries
	// its plan's proposed rule in approval.requested.
	Rules func(keys []string) (protocol.Rule, bool)
	// WiderRules makes approval.requested carry the plan's wider rule
	// and its preview diff too (protocol v4).
	WiderRules bool
	MaxSteps   int
	// Progress enables tool.progress events (protocol v3).
	Progress bool
	// TakeSteer, when set, returns (and forgets) the input a client
	// steered into the running turn since the last call; the loop adds it
	// as user messages before its next model request.
	TakeSteer func() []string
	// OnReasoning, when set, receives the model's reasoning text as it
	// streams (providers that expose it); an error stops the request like
	// a failed emission. It is no protocol event: dialects that show
	// reasoning get it from the session (session.ReasoningObserver).
	OnReasoning func(ctx context.Context, text string) error
	// Retries emits turn.retrying before a failed model request is sent
	// again (v4 sessions).
	Retries bool

	// ContextMaxTokens is the model's context window; 0 disables
	// compaction and the context check.
	ContextMaxTokens int64
	// CompactShare is the share of the window a request may fill before
	// the older history is summarized (DefaultCompactShare when 0).
	CompactShare float64
	// KeepTurns is how many recent turns compaction keeps verbatim
	// (DefaultKeepTurns when 0).
	KeepTurns int
	// HistoryTokens is the session's running estimate of the history's
	// tokens; negative means unknown (it is then computed once).
	HistoryTokens int64
}

// Failure is a turn that ended with a stable turn.failed code.
type Failure struct {
	Code    protocol.FailureCode
	Message string
	Err     error
}

func (f *Failure) Error() string { return f.Message }
func (f *Failure) Unwrap() error { return f.Err }

// Outcome is how a turn ended.
type Outcome struct {
	Steps int
	// Usage sums the provider's reports over the turn; nil when it gave none.
	Usage *protocol.Usage
	// Messages are the history entries the turn produced, starting with the
	// user's prompt. On cancellation or failure they hold the completed
	// steps, with every requested call answered, so the history stays valid.
	Messages []provider.Message
	// Err is nil for a completed turn, a context error for a cancelled one,
	// and a *Failure otherwise.
	Err error
	// Compacted is true when the turn compacted the history; History is
	// then the new history that the turn's Messages follow.
	Compacted bool
	History   []provider.Message
	// FinishReason is the provider's finish reason of the last model
	// reply ("stop", "length", "content_filter", …), empty when none came.
	FinishReason string
}

// DefaultMaxSteps is the step limit when Config.MaxSteps is zero.
const DefaultMaxSteps = 32

// progressInterval bounds tool.progress to two lines a second per call.
const progressInterval = 500 * time.Millisecond

// Run runs one turn for prompt on top of history.
func Run(ctx context.Context, cfg Config, history []provider.Message, prompt string, sink Sink) Outcome {
	l := newLoop(cfg, sink)
	l.warm = newWarmups(ctx)
	defer l.warm.stop()
	l.add(provider.Message{Role: provider.RoleUser, Content: prompt})
	l.out.Err = l.run(ctx, history)
	return l.out
}

func newLoop(cfg Config, sink Sink) *loop {
	l := &loop{cfg: cfg, sink: sink, historyTokens: cfg.HistoryTokens}
	if l.cfg.MaxSteps <= 0 {
		l.cfg.MaxSteps = DefaultMaxSteps
	}
	l.refreshSpecs()
	return l
}

// refreshSpecs rebuilds the tool specs sent to the model when the
// registry's sources changed their tools (an MCP server's list_changed,
// a server that came up), so the next model request offers the new list.
func (l *loop) refreshSpecs() {
	var gen uint64
	if l.cfg.Tools != nil {
		gen = l.cfg.Tools.Generation()
	}
	if l.specsBuilt && gen == l.specsGen {
		return
	}
	l.specs, l.specsGen, l.specsBuilt = nil, gen, true
	if l.cfg.Tools != nil {
		for _, s := range l.cfg.Tools.Specs() {
			l.specs = append(l.specs, provider.ToolSpec{Name: s.Name, Description: s.Description, Parameters: s.Schema})
		}
	}
	l.fixedTokens = tokens.Request(provider.Request{System: l.cfg.System, Tools: l.specs})
}

type loop struct {
	cfg   Config
	sink  Sink
	out   Outcome
	specs []provider.ToolSpec
	// specsGen is the registry generation specs were built at.
	specsGen   uint64
	specsBuilt bool

	// Token accounting for compaction (see compact.go).
	fixedTokens   int64 // system prompt and tool schemas
	historyTokens int64 // the history before this turn; negative: unknown
	calibrated    bool  // the provider reported the previous request's size
	calibTokens   int64 // its input tokens
	calibMsgs     int   // how many of the turn's messages it held

	// warm are the turn's warm-ups (warm.go); nil outside Run.
	warm *warmups
}

// Target is where a model request goes: the provider, the model and the
// model's context window (0 disables compaction and the context check).
type Target struct {
	Provider         provider.Provider
	Model            string
	ContextMaxTokens int64
}

// target is where the next request goes.
func (l *loop) target() Target {
	if l.cfg.Now != nil {
		return l.cfg.Now()
	}
	return Target{Provider: l.cfg.Provider, Model: l.cfg.Model, ContextMaxTokens: l.cfg.ContextMaxTokens}
}

func (l *loop) run(ctx context.Context, history []provider.Message) error {
	if l.cfg.Tools != nil {
		// Tools still on their way (an MCP server starting) are waited
		// for, each within its own startup bound, and then offered.
		l.cfg.Tools.Settle(ctx)
	}
	for step := 1; step <= l.cfg.MaxSteps; step++ {
		l.out.Steps = step
		l.refreshSpecs()
		var err error
		if history, err = l.fit(ctx, history); err != nil {
			return l.classify(ctx, err)
		}
		msgs := make([]provider.Message, 0, len(history)+len(l.out.Messages))
		msgs = append(append(msgs, history...), l.out.Messages...)
		tg := l.target()
		req := provider.Request{Model: tg.Model, System: l.cfg.System, Messages: msgs, Tools: l.specs,
			HostedWebSearch: l.cfg.HostedWebSearch && l.cfg.Tools != nil}
		held := len(l.out.Messages)

		var h provider.Handler = deltaHandler{l: l, ctx: ctx}
		if l.cfg.OnReasoning != nil {
			h = reasoningHandler{deltaHandler: deltaHandler{l: l, ctx: ctx}, on: l.cfg.OnReasoning}
		}
		// A model slow to answer lends its time to the warm-ups of the
		// tools it may call (WarmAfter).
		stopTimer := l.warm.after(l.cfg.WarmAfter, l.cfg.Tools, l.cfg.ToolEnv, l.warmCandidates())
		resp, err := tg.Provider.Stream(ctx, req, h)
		stopTimer()
		if err != nil {
			return l.classify(ctx, err)
		}
		l.addUsage(resp.Usage)
		l.calibrate(resp.Usage, held)
		l.out.FinishReason = resp.FinishReason
		if err := l.sink.Emit(ctx, &protocol.AssistantCompleted{Content: resp.Content, Usage: protoUsage(resp.Usage)}); err != nil {
			return l.classify(ctx, err)
		}
		l.add(provider.Message{Role: provider.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls, Reasoning: resp.Reasoning})
		if len(resp.ToolCalls) == 0 {
			// Input steered in while the model answered continues the
			// turn rather than being lost.
			if l.steer() {
				continue
			}
			return nil
		}
		if step == l.cfg.MaxSteps {
			l.answerRest(resp.ToolCalls, fmt.Sprintf("not run: the turn reached its limit of %d steps", l.cfg.MaxSteps))
			return &Failure{Code: protocol.FailStepLimit, Message: fmt.Sprintf("agent reached %d steps", l.cfg.MaxSteps)}
		}
		for i, call := range resp.ToolCalls {
			res, err := l.runCall(ctx, call)
			if err != nil {
				l.answerRest(resp.ToolCalls[i:], "not run: the turn was stopped before this call finished")
				return l.classify(ctx, err)
			}
			l.add(provider.Message{Role: provider.RoleTool, ToolCallID: call.ID, Content: modelText(res)})
			if err := ctx.Err(); err != nil {
				// The call finished as the turn was cancelled: its result
				// stands, the calls after it do not run.
				l.answerRest(resp.ToolCalls[i+1:], "not run: the turn was stopped before this call started")
				return l.classify(ctx, err)
			}
		}
		l.steer()
	}
	return &Failure{Code: protocol.FailStepLimit, Message: fmt.Sprintf("agent reached %d steps", l.cfg.MaxSteps)}
}

// deltaHandler streams the model's text as assistant.delta and, in v4
// sessions, tells the clients of each retry (turn.retrying).
type deltaHandler struct {
	l   *loop
	ctx context.Context
}

func (d deltaHandler) OnDelta(text string) error {
	return d.l.sink.Emit(d.ctx, &protocol.AssistantDelta{Content: text})
}

// OnRetry emits turn.retrying. A client that cannot take it does not fail
// the request being retried: the event is information, not part of the
// turn.
func (d deltaHandler) OnRetry(r provider.Retry) {
	if !d.l.cfg.Retries {
		return
	}
	_ = d.l.sink.Emit(d.ctx, &protocol.TurnRetrying{Attempt: r.Attempt, MaxAttempts: r.MaxAttempts,
		DelayMS: r.Wait.Milliseconds(), Status: r.Status, Message: r.Message})
}

// reasoningHandler adds Config.OnReasoning to a delta handler.
type reasoningHandler struct {
	deltaHandler
	on func(ctx context.Context, text string) error
}

func (r reasoningHandler) OnReasoning(text string) error { return r.on(r.ctx, text) }

// answerRest gives every call in calls a result, so the history never holds
// a request without its answer.
func (l *loop) answerRest(calls []provider.ToolCall, note string) {
	for _, c := range calls {
		l.add(provider.Message{Role: provider.RoleTool, ToolCallID: c.ID, Content: note})
	}
}

// add appends m to the turn's messages and reports it to OnMessages. Every
// message of the turn goes through add.
func (l *loop) add(m provider.Message) {
	l.out.Messages = append(l.out.Messages, m)
	if l.cfg.OnMessages != nil {
		l.cfg.OnMessages(l.out.Messages[len(l.out.Messages)-1:])
	}
}

// protoUsage is one request's usage on the protocol; nil when the
// provider reported none.
func protoUsage(u *provider.Usage) *protocol.Usage {
	if u == nil {
		return nil
	}
	return &protocol.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedInputTokens}
}

// steer adds the input steered into the running turn (Config.TakeSteer)
// as user messages; it reports whether there was any.
func (l *loop) steer() bool {
	if l.cfg.TakeSteer == nil {
		return false
	}
	inputs := l.cfg.TakeSteer()
	for _, text := range inputs {
		l.add(provider.Message{Role: provider.RoleUser, Content: text})
	}
	return len(inputs) > 0
}

func (l *loop) addUsage(u *provider.Usage) {
	if u == nil {
		return
	}
	if l.out.Usage == nil {
		l.out.Usage = &protocol.Usage{}
	}
	l.out.Usage.Add(*protoUsage(u))
}

// classify turns an error into the outcome's Err.
func (l *loop) classify(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if pe, ok := provider.AsError(err); ok {
		return &Failure{Code: protocol.FailureCode(pe.Code), Message: pe.Error(), Err: err}
	}
	var big *protocol.ErrFrameTooLarge
	if errors.As(err, &big) {
		return &Failure{Code: protocol.FailResponseLimit, Err: err,
			Message: fmt.Sprintf("an event of this turn encodes to %d bytes, over the %d-byte server frame limit", big.Size, big.Limit)}
	}
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &Failure{Code: protocol.FailInternal, Message: "internal error: " + err.Error(), Err: err}
}

// runCall takes one call through validation, preparation, the approval
// gate and execution. A returned error ends the turn; everything the model
// should read comes back as the result.
func (l *loop) runCall(ctx context.Context, call provider.ToolCall) (tools.Result, error) {
	if err := l.sink.Emit(ctx, &protocol.ToolProposed{CallID: call.ID, Name: call.Name, Arguments: call.ArgumentsJSON()}); err != nil {
		return tools.Result{}, err
	}
	rep := &reporter{ctx: ctx, sink: l.sink, call: call}
	defer rep.stop()
	var progress func(string)
	if l.cfg.Progress {
		progress = rep.report
	}
	res, plan, code := l.check(call, progress)
	if plan != nil {
		var err error
		var started bool
		res, started, code, err = l.gateAndRun(ctx, call, plan, rep)
		if err != nil {
			if started {
				// Every started call ends with tool.completed, even when the
				// turn is being cancelled; the connection still bounds the
				// wait.
				_ = l.sink.Emit(context.WithoutCancel(ctx), &protocol.ToolCompleted{CallID: call.ID, Name: call.Name,
					Success: false, Output: "cancelled: the turn ended while this call ran", ErrorCode: protocol.ToolErrorCancelled})
			}
			return tools.Result{}, err
		}
	}
	res = l.bound(res)
	if res.Success {
		code = ""
	} else if code == "" {
		code = protocol.ToolErrorFailed
	}
	ev := &protocol.ToolCompleted{CallID: call.ID, Name: call.Name, Success: res.Success,
		Output: res.Output, Truncated: res.Truncated, Jobs: res.Jobs, SettledJobs: res.Settled, ErrorCode: code}
	// A call that returned a result reports it even when the turn is being
	// cancelled: what the client is told must be what happened.
	if err := l.sink.Emit(context.WithoutCancel(ctx), ev); err != nil {
		return tools.Result{}, err
	}
	return res, nil
}

// check validates and prepares a call; a refusal comes back as a result,
// with its error code (protocol.ToolError*).
func (l *loop) check(call provider.ToolCall, progress func(string)) (tools.Result, *tools.Plan, string) {
	if l.cfg.Tools == nil || l.cfg.Tools.Len() == 0 {
		return tools.Failed(fmt.Sprintf("there are no tools in this session; answer without calling %q", call.Name)), nil, protocol.ToolErrorNotAllowed
	}
	args, err := l.cfg.Tools.Validate(call.Name, call.Arguments)
	if err != nil {
		code := protocol.ToolErrorInvalidArguments
		if _, known := l.cfg.Tools.Lookup(call.Name); !known {
			code = protocol.ToolErrorNotAllowed
		}
		return tools.Failed(err.Error()), nil, code
	}
	t, _ := l.cfg.Tools.Lookup(call.Name)
	env := l.cfg.ToolEnv
	env.Progress = progress
	env.Approve = l.relay(call)
	plan, err := t.Prepare(env, args)
	if err != nil {
		return tools.Failed(err.Error()), nil, protocol.ToolErrorInvalidArguments
	}
	return tools.Result{}, plan, ""
}

func (l *loop) gateAndRun(ctx context.Context, call provider.ToolCall, plan *tools.Plan, rep *reporter) (res tools.Result, started bool, code string, err error) {
	policy := l.cfg.Policy
	if l.cfg.PolicyNow != nil {
		policy = l.cfg.PolicyNow()
	}
	decision := policy.Decide(plan.Risk)
	if decision == approval.Ask && l.cfg.AutoApprove {
		decision = approval.Run
	}
	// Rules only replace an Ask: the policy's Run and Deny stand.
	var allowedBy *protocol.Rule
	if decision == approval.Ask && l.cfg.Rules != nil && len(plan.Keys) > 0 {
		if r, ok := l.cfg.Rules(plan.Keys); ok {
			decision, allowedBy = approval.Run, &r
		}
	}
	switch decision {
	case approval.Deny:
		return tools.Failed(fmt.Sprintf("denied: the approval policy %q does not allow %s calls (%s risk) without asking, and it never asks; do not retry this call",
			policy, call.Name, plan.Risk)), false, protocol.ToolErrorNotAllowed, nil
	case approval.Ask:
		var proposed, wider *protocol.Rule
		if l.cfg.Rules != nil && plan.Rule != nil {
			proposed = &protocol.Rule{Tool: call.Name, Key: plan.Rule.Key, Description: plan.Rule.Description}
			if l.cfg.WiderRules && plan.Wider != nil {
				wider = &protocol.Rule{Tool: call.Name, Key: plan.Wider.Key, Description: plan.Wider.Description}
			}
		}
		// The user's reading time prepares the call (bash: the login
		// profile's snapshot); the call waits for a warm-up in progress.
		l.warm.start(l.cfg.Tools, l.cfg.ToolEnv, call.Name)
		id := l.cfg.Approvals.OpenWithRules(proposed, wider)
		ev := &protocol.ApprovalRequested{ApprovalID: id, CallID: call.ID, Name: call.Name,
			Risk: plan.Risk, Cwd: l.cfg.ToolEnv.Workspace, Summary: plan.Summary, Rule: proposed, WiderRule: wider}
		if l.cfg.WiderRules {
			ev.Diff = plan.Preview // v4, like wider rules
		}
		if err := l.sink.Emit(ctx, ev); err != nil {
			l.cfg.Approvals.Forget(id)
			return tools.Result{}, false, "", err
		}
		ok, feedback, err := l.cfg.Approvals.WaitFeedback(ctx, id)
		if err != nil {
			return tools.Result{}, false, "", err
		}
		if !ok && feedback != "" {
			return tools.Failed(fmt.Sprintf("denied: the user did not approve this %s call and said why:\n%s\nTake that into account; do not retry the same call unless the user asks", call.Name, feedback)), false, protocol.ToolErrorApprovalDenied, nil
		}
		if !ok {
			return tools.Failed(fmt.Sprintf("denied: the user did not approve this %s call; do not retry it unless the user asks", call.Name)), false, protocol.ToolErrorApprovalDenied, nil
		}
	}
	if err := l.sink.Emit(ctx, &protocol.ToolStarted{CallID: call.ID, Name: call.Name, Rule: allowedBy, Risk: plan.Risk}); err != nil {
		return tools.Result{}, false, "", err
	}
	rep.start()
	res, err = plan.Run(ctx)
	rep.stop()
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, true, "", ctx.Err()
		}
		// The tool's infrastructure broke; the model reads that, the turn
		// goes on.
		return tools.Failed("the tool failed: " + err.Error()), true, protocol.ToolErrorFailed, nil
	}
	// A result, even one that comes back after the turn was cancelled, is
	// what the call did (a write that renamed its file is done): it is
	// reported as it is, and the turn stops after it.
	return res, true, "", nil
}

// relay returns the approval gate for requests a running call relays
// (tools.Env.Approve): the session's policy, auto-approval and rules
// decide as for its own calls, and an Ask becomes approval.requested
// under the relaying call's id and name. Relayed requests carry no rule,
// so "approve for the session" cannot widen what the user saw.
func (l *loop) relay(call provider.ToolCall) func(context.Context, protocol.Risk, string) bool {
	if l.cfg.Approvals == nil {
		return nil
	}
	return func(ctx context.Context, risk protocol.Risk, summary string) bool {
		policy := l.cfg.Policy
		if l.cfg.PolicyNow != nil {
			policy = l.cfg.PolicyNow()
		}
		switch decision := policy.Decide(risk); {
		case decision == approval.Deny:
			return false
		case decision == approval.Run || l.cfg.AutoApprove:
			return true
		}
		id := l.cfg.Approvals.Open()
		ev := &protocol.ApprovalRequested{ApprovalID: id, CallID: call.ID, Name: call.Name,
			Risk: risk, Cwd: l.cfg.ToolEnv.Workspace, Summary: summary}
		if err := l.sink.Emit(ctx, ev); err != nil {
			l.cfg.Approvals.Forget(id)
			return false
		}
		ok, err := l.cfg.Approvals.Wait(ctx, id)
		return err == nil && ok
	}
}

// reporter turns a call's progress lines into tool.progress events while
// the call runs: at most two a second. A line that comes sooner waits, the
// latest replacing an older one, and is forwarded when the interval is up
// or when the call ends, before its tool.completed.
type reporter struct {
	ctx  context.Context
	sink Sink
	call provider.ToolCall

	mu      sync.Mutex
	running bool        // guarded by mu
	last    time.Time   // guarded by mu; when the last line went out
	pending string      // guarded by mu
	waiting bool        // guarded by mu; pending holds a line
	timer   *time.Timer // guarded by mu
}

func (r *reporter) start() {
	r.mu.Lock()
	r.running = true
	r.mu.Unlock()
}

// stop forwards a pending line and ends reporting. It waits for a
// forwarding in progress, so no line lands after it returns.
func (r *reporter) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running {
		return
	}
	if r.timer != nil {
		r.timer.Stop()
	}
	if r.waiting {
		r.sendLocked(r.pending)
	}
	r.running = false
}

func (r *reporter) report(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running {
		return
	}
	if wait := progressInterval - time.Since(r.last); r.last.IsZero() || wait <= 0 {
		r.sendLocked(line)
		return
	} else if !r.waiting {
		if r.timer == nil {
			r.timer = time.AfterFunc(wait, r.flush)
		} else {
			r.timer.Reset(wait)
		}
	}
	r.pending, r.waiting = line, true
}

func (r *reporter) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running && r.waiting {
		r.sendLocked(r.pending)
	}
}

// sendLocked emits line. r.mu must be held: emitting under the lock keeps
// lines in order and none after stop.
func (r *reporter) sendLocked(line string) {
	r.last = time.Now()
	r.pending, r.waiting = "", false
	_ = r.sink.Emit(r.ctx, &protocol.ToolProgress{CallID: r.call.ID, Name: r.call.Name, Line: line})
}

// bound caps a result's output at the output limit on a character boundary.
func (l *loop) bound(res tools.Result) tools.Result {
	limit := l.cfg.ToolEnv.OutputLimit
	if limit > 0 && len(res.Output) > limit {
		res.Output = textcut.Prefix(res.Output, limit)
		res.Truncated = true
	}
	if !utf8.ValidString(res.Output) {
		res.Output = strings.ToValidUTF8(res.Output, "\uFFFD")
	}
	return res
}

// modelText is what the model reads for a result.
func modelText(res tools.Result) string {
	text := res.Output
	if res.Truncated {
		text += "\n[output truncated]"
	}
	if !res.Success {
		return "error: " + text
	}
	return text
}
