package appserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/statefile"
)

// DefaultAgentKey is the agentKey of a thread/start that names none.
const DefaultAgentKey = "default"

// maxRecordBytes bounds a thread record read back from disk.
const maxRecordBytes = 256 << 20

// record is what the App Server keeps of a thread beside its SCV session:
// its agentKey and metadata, and its turns and items as the live
// notifications carried them (so thread/read replays exactly them).
type record struct {
	Thread Thread `json:"thread"`
	Turns  []Turn `json:"turns"`
	Items  []Item `json:"items"`
}

// Registry is the process's threads: the live ones (an open session with
// its projector) and the stored records under StateDir/app-server.
type Registry struct {
	mgr *session.Manager
	dir string // "" keeps no records
	log *slog.Logger
	now func() time.Time
	// askTimeout is the approval timeout (DefaultApprovalTimeout when 0).
	askTimeout time.Duration

	mu   sync.Mutex
	live map[string]*projector // guarded by mu
}

// SetApprovalTimeout sets how long approval requests wait (tests use a
// short one); 0 restores DefaultApprovalTimeout.
func (r *Registry) SetApprovalTimeout(d time.Duration) { r.askTimeout = d }

// SetClock replaces the clock of timestamps (golden tests).
func (r *Registry) SetClock(now func() time.Time) { r.now = now }

// NewRegistry returns a registry whose records live under stateDir
// (SCV_HOME's state directory; empty: none are stored).
func NewRegistry(mgr *session.Manager, stateDir string, log *slog.Logger) *Registry {
	dir := ""
	if stateDir != "" {
		dir = filepath.Join(stateDir, "app-server", "threads")
	}
	return &Registry{mgr: mgr, dir: dir, log: log, now: time.Now, live: map[string]*projector{}}
}

func (r *Registry) millis() int64 { return r.now().UnixMilli() }

// load reads a stored record; nil when there is none.
func (r *Registry) load(id string) (*record, error) {
	if r.dir == "" {
		return nil, nil
	}
	b, err := statefile.ReadFile(r.dir, id+".json", maxRecordBytes, statefile.NoLinks)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the record of thread %s: %w", id, err)
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("the record of thread %s is corrupt (%v); it was left as it is", id, err)
	}
	return &rec, nil
}

// save writes a record atomically.
func (r *Registry) save(rec *record) {
	if r.dir == "" {
		return
	}
	b, err := json.Marshal(rec)
	if err == nil {
		if err = os.MkdirAll(r.dir, 0o700); err == nil {
			err = atomicfile.WriteFile(filepath.Join(r.dir, rec.Thread.ThreadID+".json"), b, 0o600)
		}
	}
	if err != nil {
		r.log.Warn("Could not store the App Server record of a thread; thread/read after a restart will miss it", "thread", rec.Thread.ThreadID, "err", err)
	}
}

// get returns a live thread's projector, or nil.
func (r *Registry) get(id string) *projector {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live[id]
}

// open returns the live projector of thread id, opening the session (a
// stored one, from the record's cwd or cwd) when it is not open.
func (r *Registry) open(id, cwd string) (*projector, error) {
	if p := r.get(id); p != nil {
		return p, nil
	}
	rec, err := r.load(id)
	if err != nil {
		return nil, &RPCError{Code: CodeInternal, Message: err.Error()}
	}
	s, err := r.mgr.Get(id)
	if err != nil {
		// Not open in this server: resume the stored session.
		if rec != nil {
			cwd = rec.Thread.Cwd
		}
		if cwd == "" {
			return nil, rpcErrorf(CodeInvalidParams, "Invalid params: thread %s is no App Server thread this server knows; send the cwd of its workspace to open the SCV session", id)
		}
		abs, werr := paths.ResolveWorkspace(cwd, true)
		if werr != nil {
			return nil, rpcErrorf(CodeInvalidParams, "Invalid params: cwd: %v", werr)
		}
		if s, err = r.mgr.Start(session.StartOptions{Cwd: abs, Resume: id, ProtocolVersion: 3}); err != nil {
			return nil, mapErr(err)
		}
		rec = mergeReplay(rec, s, r.millis())
	} else if rec == nil {
		rec = &record{}
	}
	if rec.Thread.ThreadID == "" {
		now := r.millis()
		rec.Thread = Thread{ThreadID: s.ID(), AgentKey: DefaultAgentKey, Cwd: s.Cwd(), CreatedAt: now, UpdatedAt: now}
	}
	return r.attach(s, rec)
}

// attach makes and registers the projector of session s.
func (r *Registry) attach(s *session.Session, rec *record) (*projector, error) {
	p := newProjector(r, s, rec)
	unsub, err := s.Subscribe(p.ctx, p)
	if err != nil {
		p.cancel()
		return nil, mapErr(err)
	}
	p.unsub = unsub
	r.mu.Lock()
	if other := r.live[s.ID()]; other != nil {
		r.mu.Unlock()
		unsub()
		p.cancel()
		return other, nil
	}
	r.live[s.ID()] = p
	r.mu.Unlock()
	return p, nil
}

// forget drops a closed thread.
func (r *Registry) forget(p *projector) {
	r.mu.Lock()
	if r.live[p.s.ID()] == p {
		delete(r.live, p.s.ID())
	}
	r.mu.Unlock()
}

// mergeReplay chooses a resumed thread's items: the record's, unless the
// SCV transcript has more user turns (the TUI ran turns meanwhile), then
// the transcript's projection, which invents no field.
func mergeReplay(rec *record, s *session.Session, now int64) *record {
	replay := s.TakeReplay()
	users := 0
	for _, it := range replay {
		if it.Kind == "user" {
			users++
		}
	}
	if rec != nil {
		have := 0
		for _, it := range rec.Items {
			if it.Type == ItemUserMessage {
				have++
			}
		}
		if have >= users {
			return rec
		}
	} else {
		rec = &record{}
	}
	rec.Items = projectReplay(s.ID(), replay, now)
	return rec
}

// threadStart starts an SCV session and its thread.
func (c *conn) threadStart(_ Message, p ThreadStartParams) (any, error) {
	if p.Cwd == "" {
		return nil, rpcErrorf(CodeInvalidParams, "Invalid params: thread/start needs cwd, the workspace directory")
	}
	abs, err := paths.ResolveWorkspace(p.Cwd, true)
	if err != nil {
		return nil, rpcErrorf(CodeInvalidParams, "Invalid params: cwd: %v", err)
	}
	if p.AgentKey == "" {
		p.AgentKey = DefaultAgentKey
	}
	s, err := c.mgr.Start(session.StartOptions{Cwd: abs, ProtocolVersion: 3})
	if err != nil {
		return nil, mapErr(err)
	}
	reg := c.opts.Threads
	now := reg.millis()
	rec := &record{Thread: Thread{ThreadID: s.ID(), AgentKey: p.AgentKey, Cwd: p.Cwd, CreatedAt: now, UpdatedAt: now, Metadata: p.Metadata},
		Turns: []Turn{}, Items: []Item{}}
	reg.save(rec)
	pr, err := reg.attach(s, rec)
	if err != nil {
		_ = c.mgr.CloseSession(c.ctx, s.ID())
		return nil, err
	}
	th := pr.subscribe(c)
	// The response first, then thread/started.
	c.out.put(c.ctx, responseLine(c.currentID, th, nil), true)
	c.notify(c.ctx, "thread/started", th)
	return answered, nil
}

// threadResume subscribes to a thread and returns its history.
func (c *conn) threadResume(_ Message, p ResumeParams) (any, error) {
	pr, err := c.opts.Threads.open(p.ThreadID, p.Cwd)
	if err != nil {
		return nil, err
	}
	pr.subscribe(c)
	return pr.read(), nil
}

// threadRead returns a thread's history without subscribing.
func (c *conn) threadRead(_ Message, p ResumeParams) (any, error) {
	reg := c.opts.Threads
	if pr := reg.get(p.ThreadID); pr != nil {
		return pr.read(), nil
	}
	rec, err := reg.load(p.ThreadID)
	if err != nil {
		return nil, &RPCError{Code: CodeInternal, Message: err.Error()}
	}
	if rec == nil {
		// A session the App Server never ran: open it to read it.
		pr, err := reg.open(p.ThreadID, p.Cwd)
		if err != nil {
			return nil, err
		}
		res := pr.read()
		pr.closeIfIdle()
		return res, nil
	}
	rec.Thread.Status = ThreadClosed
	return ThreadReadResult{Thread: rec.Thread, Turns: nonNil(rec.Turns), Items: nonNil(rec.Items)}, nil
}

// threadList lists the stored sessions of a workspace as threads.
func (c *conn) threadList(_ Message, p ThreadListParams) (any, error) {
	abs, err := paths.ResolveWorkspace(p.Cwd, true)
	if err != nil {
		return nil, rpcErrorf(CodeInvalidParams, "Invalid params: cwd: %v", err)
	}
	list, err := c.mgr.List(abs, p.Limit)
	if err != nil {
		return nil, mapErr(err)
	}
	out := ThreadListResult{Threads: []ThreadSummary{}}
	for _, s := range list {
		status := ThreadClosed
		if pr := c.opts.Threads.get(s.SessionID); pr != nil {
			status = pr.status()
		}
		out.Threads = append(out.Threads, ThreadSummary{ThreadID: s.SessionID, Cwd: s.Cwd, Title: s.Title,
			CreatedAt: rfcMillis(s.CreatedAt), UpdatedAt: rfcMillis(s.UpdatedAt), Turns: s.Turns, Status: status})
	}
	return out, nil
}

// threadUnsubscribe removes this connection from a thread; with no
// subscriber and no running turn left the thread closes.
func (c *conn) threadUnsubscribe(_ Message, p ThreadParams) (any, error) {
	c.mu.Lock()
	pr := c.threads[p.ThreadID]
	delete(c.threads, p.ThreadID)
	c.mu.Unlock()
	if pr == nil {
		return nil, rpcErrorf(CodeNotFound, "thread %s is not subscribed on this connection", p.ThreadID)
	}
	closed := pr.unsubscribe(c, true)
	if closed {
		c.out.put(c.ctx, responseLine(c.currentID, ThreadUnsubscribeResult{ThreadID: p.ThreadID, Subscribed: false, Closed: true}, nil), true)
		c.notify(c.ctx, "thread/closed", ThreadClosedParams(p))
		c.notify(c.ctx, "thread/status/changed", ThreadStatusChangedParams{ThreadID: p.ThreadID, Status: ThreadClosed})
		return answered, nil
	}
	return ThreadUnsubscribeResult{ThreadID: p.ThreadID, Subscribed: false, Closed: false}, nil
}

// rfcMillis converts an RFC 3339 time to Unix milliseconds (0 when empty
// or malformed).
func rfcMillis(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
