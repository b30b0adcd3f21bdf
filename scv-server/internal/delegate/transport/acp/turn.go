package acp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/output"
)

// Run implements delegate.Backend: the first call of a conversation
// starts its server and session, later ones (call.ResumeCLISession, the
// key an earlier result returned) run on the live server. The result's
// CLISession names the server while the conversation can go on, and is
// empty once its server is gone (the conversation is then forgotten).
func (b *backend) Run(ctx context.Context, call delegate.Call, progress func(string)) delegate.Result {
	res := delegate.Result{Agent: b.a.Name, Session: call.Conversation, Turn: call.Turn}
	if call.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, call.Timeout, errTimeout)
		defer cancel()
	}
	var s *server
	if call.ResumeCLISession != "" {
		if s = b.r.lookup(call.ResumeCLISession); s == nil || s.exited() {
			return b.fail(res, delegate.ErrorUnavailable, fmt.Sprintf(
				"the ACP server of %s that held conversation %s has exited, so the conversation has ended; omit session to start a new conversation",
				b.a.Product, call.Conversation))
		}
	} else {
		var err error
		if s, err = b.start(ctx, call); err != nil {
			return b.startFailed(ctx, res, err)
		}
	}
	res = s.turn(ctx, call, progress, res)
	if call.Conversation == "" && res.CLISession != "" {
		// A one-off call keeps no conversation.
		b.r.Forget(res.CLISession)
		res.CLISession = ""
	}
	return res
}

// errTimeout is the cause of a call's deadline.
var errTimeout = errors.New("the call's timeout passed")

// startFailed is the result of a conversation whose server could not
// start or open its session.
func (b *backend) startFailed(ctx context.Context, res delegate.Result, err error) delegate.Result {
	if ctx.Err() != nil {
		return b.stopped(ctx, res)
	}
	var se *startError
	if errors.As(err, &se) {
		if se.killed {
			res.Status = delegate.StatusCancelled
			res.Error = fmt.Sprintf("the %s conversation was stopped with `scv agents kill` while it started", b.a.Product)
			return res
		}
		return b.fail(res, se.kind, se.msg)
	}
	return b.fail(res, delegate.ErrorNone, err.Error())
}

// stopped sets a result for a call whose context ended: timeout or
// cancelled.
func (b *backend) stopped(ctx context.Context, res delegate.Result) delegate.Result {
	if errors.Is(context.Cause(ctx), errTimeout) {
		res.Status = delegate.StatusTimeout
		res.Error = fmt.Sprintf("%s did not finish within the call's timeout, so its turn was cancelled; raise timeout_seconds for long work", b.a.Product)
		return res
	}
	res.Status = delegate.StatusCancelled
	res.Error = fmt.Sprintf("the %s call was cancelled", b.a.Product)
	return res
}

// fail returns res as a failure of kind with the error msg, with the
// sign-in hint when it reads like a missing sign-in.
func (b *backend) fail(res delegate.Result, kind delegate.ErrorKind, msg string) delegate.Result {
	res.Status, res.Kind = delegate.StatusFailed, kind
	res.Error, _ = output.Bound(msg, maxError)
	if kind == delegate.ErrorNone {
		res.Kind = output.Classify(msg)
	}
	if res.Kind == delegate.ErrorSignedOut {
		res.Hint = delegate.SignInHint(b.a.Product, b.a.Name)
	}
	return res
}

// promptDone is how a session/prompt request ended.
type promptDone struct {
	resp acpsdk.PromptResponse
	err  error
}

// turn runs one call on the server: the model and effort selections,
// then session/prompt, waiting for its stopReason, a cancellation or
// timeout (session/cancel, CancelGrace to answer, else shutdown), or the
// server's exit.
func (s *server) turn(ctx context.Context, call delegate.Call, progress func(string), res delegate.Result) delegate.Result {
	b := s.b
	res.CLISession = s.key
	s.turnStarted(call)
	defer s.turnEnded()
	if msg := s.selectOptions(ctx, call); msg != "" {
		if ctx.Err() != nil {
			return b.stopped(ctx, res)
		}
		return b.fail(res, delegate.ErrorNone, msg)
	}
	t := newTurn(call, progress)
	s.client.setTurn(t)
	defer s.client.setTurn(nil)

	// The prompt's own context is never cancelled by the call: the SDK
	// would send $/cancel_request and return at once, without the
	// stopReason. It ends with the server instead.
	pctx, pcancel := context.WithCancel(context.Background())
	defer pcancel()
	done := make(chan promptDone, 1)
	go func() {
		resp, err := s.conn.Prompt(pctx, acpsdk.PromptRequest{SessionId: s.session, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(call.Prompt)}})
		done <- promptDone{resp, err}
	}()
	var pd promptDone
	select {
	case pd = <-done:
	case <-s.done:
		pd = <-done
	case <-s.stopping:
		pd = <-done
	case <-ctx.Done():
		t.cancel()
		_ = s.conn.Cancel(context.Background(), acpsdk.CancelNotification{SessionId: s.session})
		select {
		case pd = <-done:
		case <-time.After(CancelGrace):
			// It did not answer: shut it down; the conversation is
			// forgotten.
			s.shutdown()
			pd = <-done
			res = b.stopped(ctx, res)
			res.Reply, res.Truncated = output.Bound(t.finish(), b.r.opts.OutputLimit)
			res.CLISession = ""
			res.Error += fmt.Sprintf("; %s did not stop within %s of session/cancel, so its ACP server was shut down and the conversation ended", b.a.Product, CancelGrace)
			return res
		}
	}
	res.Reply, res.Truncated = b.bound(t.finish())
	if pd.resp.Usage != nil {
		res.Usage = &delegate.Usage{InputTokens: int64(pd.resp.Usage.InputTokens), OutputTokens: int64(pd.resp.Usage.OutputTokens)}
	}
	return s.conclude(ctx, res, pd)
}

// bound cuts a reply to the output limit.
func (b *backend) bound(reply string) (string, bool) {
	limit := b.r.opts.OutputLimit
	if limit <= 0 {
		limit = output.DefaultLimit
	}
	return output.Bound(reply, limit)
}

// conclude maps how the prompt ended onto the result.
func (s *server) conclude(ctx context.Context, res delegate.Result, pd promptDone) delegate.Result {
	b := s.b
	if pd.err != nil {
		switch {
		case s.exited() || isPeerGone(pd.err):
			<-s.endedOrTimeout()
			res.CLISession = ""
			if s.killRequested() {
				res.Status = delegate.StatusCancelled
				res.Error = fmt.Sprintf("the %s conversation was stopped with `scv agents kill %s`", b.a.Product, s.key)
				return res
			}
			if ctx.Err() != nil {
				return b.stopped(ctx, res)
			}
			res.StderrTail = s.stderr.String()
			res.Truncated = res.Truncated || s.stderr.total() > StderrTail
			msg := fmt.Sprintf("the ACP server of %s exited during the turn", b.a.Product)
			if err := s.exitErr(); err != nil {
				msg += " (" + err.Error() + ")"
			}
			if tail := lastLine(res.StderrTail); tail != "" {
				msg += ": " + output.Redact(tail)
			}
			kind := output.Classify(res.StderrTail)
			if kind == delegate.ErrorNone {
				kind = delegate.ErrorUnavailable
			}
			return b.fail(res, kind, msg)
		case ctx.Err() != nil:
			return b.stopped(ctx, res)
		}
		kind := delegate.ErrorNone
		if isAuthRequired(pd.err) {
			kind = delegate.ErrorSignedOut
		}
		return b.fail(res, kind, fmt.Sprintf("%s failed: %s", b.a.Product, redactError(pd.err)))
	}
	switch pd.resp.StopReason {
	case acpsdk.StopReasonEndTurn:
		if ctx.Err() != nil {
			// It finished while being cancelled: what it did stands.
			res.Status = delegate.StatusCompleted
			return res
		}
		res.Status = delegate.StatusCompleted
	case acpsdk.StopReasonCancelled:
		if ctx.Err() != nil {
			return b.stopped(ctx, res)
		}
		res.Status = delegate.StatusCancelled
		res.Error = fmt.Sprintf("%s cancelled the turn itself", b.a.Product)
	case acpsdk.StopReasonRefusal:
		res.Status = delegate.StatusDeclined
	default:
		res.Status = delegate.StatusCompleted
		res.Reply = strings.TrimSpace(res.Reply + "\n\n(stopped early: " + string(pd.resp.StopReason) + ")")
	}
	return res
}

// selectOptions applies the call's model and effort through
// session/set_config_option on the session's options of category model
// and thought_level. A value the agent does not offer fails the call with
// the offered list (the conversation goes on); it returns that message.
func (s *server) selectOptions(ctx context.Context, call delegate.Call) string {
	for _, sel := range []struct {
		value, what string
		cat         acpsdk.SessionConfigOptionCategory
		ids         []string
	}{
		{call.Model, "model", acpsdk.SessionConfigOptionCategoryModel, []string{"model"}},
		{call.Effort, "effort", acpsdk.SessionConfigOptionCategoryThoughtLevel, []string{"effort", "reasoning_effort", "thought_level"}},
	} {
		if sel.value == "" {
			continue
		}
		s.mu.Lock()
		opts := s.options
		s.mu.Unlock()
		opt, ok := findOption(opts, sel.cat, sel.ids...)
		if !ok {
			return fmt.Sprintf("%s offers no %s selection over ACP in this session; omit %s", s.b.a.Product, sel.what, sel.what)
		}
		values := optionValues(opt)
		if !slices.Contains(values, sel.value) {
			return fmt.Sprintf("%s does not offer %s %q; it offers %s. Call again with one of them, or omit %s",
				s.b.a.Product, sel.what, sel.value, strings.Join(values, ", "), sel.what)
		}
		if string(opt.CurrentValue) == sel.value {
			continue
		}
		if err := s.setOption(ctx, opt.Id, sel.value); err != nil {
			return fmt.Sprintf("%s refused %s %q: %s", s.b.a.Product, sel.what, sel.value, redactError(err))
		}
	}
	return ""
}

// findOption returns the select option of category cat, else the first
// whose id is one of ids.
func findOption(opts []acpsdk.SessionConfigOption, cat acpsdk.SessionConfigOptionCategory, ids ...string) (*acpsdk.SessionConfigOptionSelect, bool) {
	for _, o := range opts {
		if o.Select != nil && o.Select.Category != nil && *o.Select.Category == cat {
			return o.Select, true
		}
	}
	for _, o := range opts {
		if o.Select != nil && slices.Contains(ids, string(o.Select.Id)) {
			return o.Select, true
		}
	}
	return nil, false
}

// optionValues lists the values a select option offers, grouped or not.
func optionValues(o *acpsdk.SessionConfigOptionSelect) []string {
	var out []string
	if u := o.Options.Ungrouped; u != nil {
		for _, v := range *u {
			out = append(out, string(v.Value))
		}
	}
	if g := o.Options.Grouped; g != nil {
		for _, grp := range *g {
			for _, v := range grp.Options {
				out = append(out, string(v.Value))
			}
		}
	}
	return out
}
