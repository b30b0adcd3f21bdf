// Package acp is the Agent Client Protocol dialect (ACP v1, JSON-RPC 2.0 in
// one JSON object per line): editors such as Zed drive SCV's session
// runtime through it, beside the NDJSON dialect. It uses the agent side of
// github.com/coder/acp-go-sdk for the JSON-RPC connection and maps ACP's
// methods onto session.Manager and session.Session, and the sessions'
// events onto session/update notifications (docs/acp.md has the table).
//
// Goroutines of one connection, all owned by Serve and joined before it
// returns:
//   - the SDK's: its reader (reading through the gate, lines.go), its
//     notification worker, one per inbound request;
//   - the writer, which sends the sessions' updates in order through a
//     bounded queue and answers prompts after their turn's last update;
//   - one per permission request the client has not answered yet, and one
//     per session/cancel doing the cancelling (which may wait for the
//     session's emit lock, so the SDK's notification worker never blocks).
//
// A write to a client that stopped reading blocks the writer, and so the
// turns (their events wait for room); at the end of input Serve waits for
// the writer for the grace period only.
//
// Traps of the SDK this package works around: a second session/prompt of
// a session cancels the first one's context, so a prompt's turn never ends
// with its request context (session/cancel does that, explicitly); lists
// are always sent as [] and never null; a notification handler never
// blocks.
package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/scv-cli/scv/scv-server/internal/approval"
	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/version"
)

// ProtocolVersion is the ACP version this agent speaks.
const ProtocolVersion = acpsdk.ProtocolVersionNumber

// QueueItems bounds the writer queue: updates wait for room (the session
// coalesces streamed text meanwhile).
const QueueItems = 1024

// Options configure a connection.
type Options struct {
	// NoProvider is set when no model provider is configured (the server
	// would run the demo model): sessions are then refused with
	// auth_required (-32000) and a message that says how to configure one.
	NoProvider bool
	// CloseManager makes the end of the connection the end of the
	// manager's turns (stdio). Otherwise sessions outlive the connection.
	CloseManager bool
	// Models, when set, lists the models the provider serves (nil or an
	// empty list when it lists none): sessions then offer a "model"
	// option. It may be slow the first time (the provider is asked once).
	Models func(ctx context.Context) []string
	// Grace is how long turns may take to wind down at the end (3 s when 0).
	Grace  time.Duration
	Logger *slog.Logger
}

// Serve runs one ACP connection over rw until its input ends or ctx ends.
// It returns nil at the end of input and the input's or output's error
// otherwise.
func Serve(ctx context.Context, mgr *session.Manager, rw io.ReadWriter, opts Options) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Grace <= 0 {
		opts.Grace = 3 * time.Second
	}
	connCtx, stop := context.WithCancel(context.Background())
	defer stop()
	out := &lineWriter{w: rw}
	in := newGate(rw, out)
	a := &agent{
		opts: opts, log: opts.Logger, mgr: mgr, ctx: connCtx,
		queue:    make(chan item, QueueItems),
		sessions: map[string]*attached{},
	}
	a.conn = acpsdk.NewAgentSideConnection(a, out, in)
	a.conn.SetLogger(opts.Logger)
	close(in.ready)

	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		a.writeLoop()
	}()

	var endErr error
	select {
	case <-a.conn.Done():
		if in.err != nil && !errors.Is(in.err, io.EOF) {
			endErr = fmt.Errorf("reading the client's messages: %w", in.err)
		}
	case <-ctx.Done():
		endErr = ctx.Err()
	}

	// Cleanup: cancel the turns (stdio), end the connection's context
	// first, so that no emission waits on the writer queue any more and
	// detaching never waits on a client that is gone, then detach and join
	// the writer and every helper goroutine. Updates still queued are
	// dropped: the client has ended the connection.
	graceCtx, cancel := context.WithTimeout(context.Background(), opts.Grace)
	defer cancel()
	if opts.CloseManager {
		mgr.CancelAll()
	}
	stop()
	a.detachAll()
	a.spawnMu.Lock()
	a.ended = true
	a.spawnMu.Unlock()
	helpersDone := make(chan struct{})
	go func() {
		<-writerDone
		a.helpers.Wait()
		close(helpersDone)
	}()
	select {
	case <-helpersDone:
	case <-graceCtx.Done():
		// A write to a client that stopped reading cannot be interrupted;
		// the process exit ends it.
		a.log.Warn("The ACP writer did not finish within the grace period; the client is not reading its output")
	}
	if opts.CloseManager {
		mgr.Close(graceCtx)
	}
	return endErr
}

// agent implements acpsdk.Agent over the session runtime.
type agent struct {
	opts Options
	log  *slog.Logger
	mgr  *session.Manager
	conn *acpsdk.AgentSideConnection
	// ctx ends when the connection is torn down.
	ctx context.Context

	queue   chan item // the writer's; Deliver waits for room
	nextID  atomic.Uint64
	helpers sync.WaitGroup
	spawnMu sync.Mutex
	ended   bool // guarded by spawnMu: no helper starts after Serve joins them

	mu         sync.Mutex
	sessions   map[string]*attached // guarded by mu
	clientName string               // guarded by mu
}

// item is one thing for the writer to do, in order.
type item struct {
	sid    string
	update *acpsdk.SessionUpdate
	// permission asks the client about an approval.
	permission *acpsdk.RequestPermissionRequest
	approvalID string
	// end answers the prompt waiting for requestID after every earlier
	// update went out.
	end       *result
	requestID string
}

// result is how a prompt ended.
type result struct {
	stop acpsdk.StopReason
	err  error
}

func (a *agent) requestID() string {
	return "acp-" + strconv.FormatUint(a.nextID.Add(1), 10)
}

// spawn runs f on a helper goroutine the connection joins.
func (a *agent) spawn(f func()) {
	a.spawnMu.Lock()
	defer a.spawnMu.Unlock()
	if a.ended {
		return
	}
	a.helpers.Add(1)
	go func() {
		defer a.helpers.Done()
		f()
	}()
}

// push hands an item to the writer, waiting for room; false when the
// connection or ctx ended first.
func (a *agent) push(ctx context.Context, it item) bool {
	select {
	case a.queue <- it:
		return true
	case <-a.ctx.Done():
		return false
	case <-ctx.Done():
		return false
	}
}

// writeLoop sends the queue's items until the connection ends.
func (a *agent) writeLoop() {
	for {
		select {
		case <-a.ctx.Done():
			return
		case it := <-a.queue:
			a.write(it)
		}
	}
}

func (a *agent) write(it item) {
	switch {
	case it.update != nil:
		if err := a.conn.SessionUpdate(a.ctx, acpsdk.SessionNotification{SessionId: acpsdk.SessionId(it.sid), Update: *it.update}); err != nil {
			a.log.Debug("Could not send a session update", "session", it.sid, "err", err)
		}
	case it.permission != nil:
		st := a.session(it.sid)
		if st == nil {
			return
		}
		ctx := st.permissionCtx()
		req, approvalID := *it.permission, it.approvalID
		a.spawn(func() { a.askPermission(ctx, st, req, approvalID) })
	case it.end != nil:
		if st := a.session(it.sid); st != nil {
			st.cancelPermissions()
			st.answer(it.requestID, *it.end)
		}
	}
}

// askPermission asks the client about one approval and resolves it; a
// cancelled outcome, a withdrawn request or a failed call deny it.
func (a *agent) askPermission(ctx context.Context, st *attached, req acpsdk.RequestPermissionRequest, approvalID string) {
	resp, err := a.conn.RequestPermission(ctx, req)
	approved, scope := false, protocol.ScopeOnce
	switch {
	case err != nil:
		a.log.Debug("A permission request ended without an answer; the call is denied", "session", st.s.ID(), "err", err)
	case resp.Outcome.Selected != nil:
		switch resp.Outcome.Selected.OptionId {
		case optionAllowOnce:
			approved = true
		case optionAllowAlways:
			approved, scope = true, protocol.ScopeSession
		case optionRejectOnce:
		default:
			a.log.Warn("The client chose an option this agent never offered; the call is denied", "option", resp.Outcome.Selected.OptionId)
		}
	}
	if err := st.s.ResolveApproval(approvalID, approved, scope); err != nil {
		a.log.Debug("Approval already settled", "approval", approvalID, "err", err)
	}
}

// Permission option ids (clients map options by kind, never by id).
const (
	optionAllowOnce   = "allow-once"
	optionAllowAlways = "allow-always"
	optionRejectOnce  = "reject-once"
)

// session returns an attached session, or nil.
func (a *agent) session(id string) *attached {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
}

// detachAll unsubscribes from every session and answers every waiting
// prompt with a cancellation.
func (a *agent) detachAll() {
	a.mu.Lock()
	all := a.sessions
	a.sessions = map[string]*attached{}
	a.mu.Unlock()
	for _, st := range all {
		st.unsubscribe()
		st.cancelPermissions()
		st.answerAll(result{stop: acpsdk.StopReasonCancelled})
	}
}

// attached is this connection's view of one session.
type attached struct {
	a           *agent
	s           *session.Session
	unsubscribe func()

	mu sync.Mutex
	// waiters are the prompts waiting for their turn's end, by request id
	// (guarded by mu).
	waiters map[string]chan result
	// queued maps the queue ids of this connection's queued prompts to
	// their request ids (guarded by mu).
	queued map[string]string
	// turn is the running turn's id, and turnRequest its request id
	// (guarded by mu).
	turn, turnRequest string
	// message is the id of the assistant message being streamed; empty
	// before its first delta (guarded by mu).
	message string
	// thought is the id of the reasoning being streamed; empty before its
	// first chunk (guarded by mu).
	thought string
	// calls are the tool calls seen in the running turn (guarded by mu).
	calls map[string]*call
	// early are prompts a session/cancel found neither queued nor running:
	// they cancel themselves once started (guarded by mu).
	early map[string]bool
	// permCtx ends the outstanding permission requests (guarded by mu).
	permCtx    context.Context
	permCancel context.CancelFunc
}

func newAttached(a *agent, s *session.Session) *attached {
	st := &attached{a: a, s: s, waiters: map[string]chan result{}, queued: map[string]string{}, calls: map[string]*call{}, early: map[string]bool{}}
	st.permCtx, st.permCancel = context.WithCancel(a.ctx)
	return st
}

func (st *attached) permissionCtx() context.Context {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.permCtx
}

// cancelPermissions withdraws the outstanding permission requests (the
// SDK sends $/cancel_request for each).
func (st *attached) cancelPermissions() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.permCancel()
	st.permCtx, st.permCancel = context.WithCancel(st.a.ctx)
}

func (st *attached) answer(requestID string, r result) {
	st.mu.Lock()
	w, ok := st.waiters[requestID]
	delete(st.waiters, requestID)
	delete(st.early, requestID)
	st.mu.Unlock()
	if ok {
		w <- r
	}
}

func (st *attached) answerAll(r result) {
	st.mu.Lock()
	ws := st.waiters
	st.waiters = map[string]chan result{}
	st.early = map[string]bool{}
	st.mu.Unlock()
	for _, w := range ws {
		w <- r
	}
}

// Room reports whether the writer queue has room; the session coalesces
// streamed text while it has none.
func (st *attached) Room(int) bool { return len(st.a.queue) < cap(st.a.queue) }

// Deliver maps one session event to ACP updates and queues them, waiting
// for room. It runs under the session's emit lock, so it only translates
// and queues.
func (st *attached) Deliver(ctx context.Context, ev protocol.Sequenced) error {
	for _, it := range st.translate(ev) {
		it.sid = st.s.ID()
		if !st.a.push(ctx, it) {
			// A connection that has ended drops what is delivered to it,
			// and the session goes on (with other subscribers, or for the
			// next client of a daemon).
			return ctx.Err()
		}
	}
	return nil
}

// mapPolicy returns the approval policy of a mode id.
func mapPolicy(mode string) (approval.Policy, bool) {
	for _, m := range modes {
		if string(m.Id) == mode {
			return approval.Policy(mode), true
		}
	}
	return "", false
}

// Version is the agent's version, reported in initialize.
func Version() string { return version.Version }
