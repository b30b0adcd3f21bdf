package sessionstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/statefile"
)

// Record types (record.T).
const (
	recMeta    = "meta"    // first line: v, id, cwd, model, at (created)
	recTurn    = "turn"    // a turn started: turn, request, origin, at
	recMsg     = "msg"     // one history message: turn, msg, failed, synthetic
	recEnd     = "end"     // a turn ended: turn, outcome, code, message, steps, usage, at
	recClear   = "clear"   // the history and usage were dropped: at
	recCompact = "compact" // part of the history is replaced: from, removed, messages, at
	recResume  = "resume"  // a server resumed the session: model, at
	recRule    = "rule"    // a session approval rule was granted: rule, at
	recUnrule  = "unrule"  // a session approval rule was revoked: rule (its key), at
	// recQueue is the record of earlier servers, which wrote the whole
	// queue at every change (quadratic in the queue's size); it is still
	// read. Queue changes are now written as one record each, below.
	recQueue       = "queue"   // the prompt queue changed: queue (the whole queue, in order), at
	recQueueAdd    = "qadd"    // a prompt joined the end of the queue: q (the whole entry), at
	recQueueUpdate = "qupdate" // a queued prompt was replaced: q (queue_id, revision, prompt), at
	recQueueMove   = "qmove"   // a queued prompt moved: q (queue_id, revision), before (the entry it now precedes; none: the end), at
	recQueueRemove = "qremove" // a prompt left the queue, removed or taken to run: q (queue_id), at
)

// Outcomes of a turn, in its end record.
const (
	OutcomeCompleted   = "completed"
	OutcomeCancelled   = "cancelled"
	OutcomeFailed      = "failed"
	OutcomeInterrupted = "interrupted" // written when resuming a turn that had no end
)

// record is one line of the log. Which fields a record has depends on T.
type record struct {
	T  string `json:"t"`
	At string `json:"at,omitempty"` // RFC 3339, nanoseconds

	V     int    `json:"v,omitempty"`
	ID    string `json:"id,omitempty"`
	Cwd   string `json:"cwd,omitempty"`
	Model string `json:"model,omitempty"`

	Turn    string           `json:"turn,omitempty"`
	Request string           `json:"request,omitempty"`
	Origin  *protocol.Origin `json:"origin,omitempty"`

	// Msg is the message in provider.Message's own JSON form.
	Msg *provider.Message `json:"msg,omitempty"`
	// Failed marks a tool result whose call did not succeed.
	Failed bool `json:"failed,omitempty"`
	// Synthetic marks a tool result the store made up for an interrupted
	// call.
	Synthetic bool `json:"synthetic,omitempty"`

	Outcome string          `json:"outcome,omitempty"`
	Code    string          `json:"code,omitempty"`
	Message string          `json:"message,omitempty"`
	Steps   int             `json:"steps,omitempty"`
	Usage   *protocol.Usage `json:"usage,omitempty"`

	// A compact record replaces the Removed messages of the history that
	// start at index From with Messages.
	From     int                `json:"from,omitempty"`
	Removed  int                `json:"removed,omitempty"`
	Messages []provider.Message `json:"messages,omitempty"`

	// Rule is a granted session approval rule.
	Rule *protocol.Rule `json:"rule,omitempty"`
	// Queue is the whole prompt queue after a change, in order (a queue
	// record without it: the queue is empty). Only earlier servers write
	// it.
	Queue []Queued `json:"queue,omitempty"`
	// Q is the queue entry a qadd, qupdate, qmove or qremove record is
	// about: whole for qadd, the fields that changed otherwise.
	Q *Queued `json:"q,omitempty"`
	// Before is the queue_id a qmove record's entry now precedes; empty:
	// it moved to the end.
	Before string `json:"before,omitempty"`
}

// Queued is one queued prompt as the log keeps it.
type Queued struct {
	QueueID   string `json:"queue_id"`
	Revision  int64  `json:"revision,omitempty"`
	Prompt    string `json:"prompt,omitempty"`
	Submitter string `json:"submitter,omitempty"`
	// Request is the request_id of the turn.start that queued it; its turn
	// starts with that request_id.
	Request string `json:"request,omitempty"`
}

// End is how a turn ended, for TurnEnded.
type End struct {
	Outcome string // OutcomeCompleted, OutcomeCancelled or OutcomeFailed
	Code    string // the failure code of a failed turn
	Message string // the failure message of a failed turn
	Steps   int
	Usage   *protocol.Usage // the turn's usage; nil when none was reported
}

// ErrStopped is returned by every write of a log that stopped recording
// after a write failed.
var ErrStopped = errors.New("the session log stopped recording after an earlier write failed")

// Log is a session's log, open for appending. Its methods are safe for
// concurrent use; records land in the order the calls return.
//
// A write that fails (a full disk) is undone by cutting the file back to
// the end of the last complete record, and the log then stops recording:
// every later write returns ErrStopped, so the log never holds a history
// with a hole in it. What was written before stays resumable.
type Log struct {
	st   *Store
	id   string
	path string

	mu      sync.Mutex
	f       *os.File // nil once closed
	size    int64    // end of the last complete record
	enc     *json.Encoder
	buf     bytes.Buffer
	stopped error   // the failure that stopped recording
	sum     summary // what summary.json holds
	fresh   bool    // created by Create, not resumed
	// dirSynced, until the first fsync of the log after Create, carries
	// the outcome of the fsync of the log's directory, which Create starts
	// in a goroutine of its own; nil once it was received.
	dirSynced chan error
	// repair is what Resume appends: the end of a turn the log left open
	// and the torn tail to cut first (validEnd < file size).
	repair   []*record
	validEnd int64
}

// Create creates the log of a new session with its meta record, made
// durable by the first turn boundary; the summary comes with the first turn.
func (st *Store) Create(m Meta) (*Log, error) {
	if !ValidID(m.ID) {
		return nil, fmt.Errorf("creating the log of session %q: not a session id", m.ID)
	}
	if err := st.ensureDirs(m.ID); err != nil {
		return nil, err
	}
	path := st.LogPath(m.ID)
	f, err := statefile.Open(st.dir, st.logName(m.ID), os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, FileMode, statefile.NoLinks)
	if err != nil {
		return nil, fmt.Errorf("creating the session log: %w", err)
	}
	if err := f.Chmod(FileMode); err != nil { // exactly 0600, whatever the umask
		_ = f.Close()
		return nil, fmt.Errorf("creating the session log: %w", err)
	}
	if err := lockFile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	if m.Created.IsZero() {
		m.Created = now()
	}
	l := newLog(st, m.ID, path, f, 0)
	l.fresh = true
	l.sum = summary{V: formatVersion, SessionID: m.ID, Cwd: m.Cwd, CreatedAt: formatTime(m.Created)}
	meta := &record{T: recMeta, V: formatVersion, ID: m.ID, Cwd: m.Cwd, Model: m.Model, At: stamp(m.Created)}
	// No fsync here, before the first model request (issue 23): the
	// durability rule starts at the first turn boundary, whose fsync also
	// makes the meta record and the log's directory entry durable
	// (dirSynced). Until then a power loss may lose the log, which holds
	// nothing a turn finished.
	if err := l.append(false, meta); err != nil {
		_ = l.closeFile()
		_ = os.Remove(path)
		return nil, err
	}
	// The directory's fsync runs beside the turn's first model request;
	// the first fsync of the log waits for it (dirSynced).
	dirSynced := make(chan error, 1)
	l.dirSynced = dirSynced
	go func() { dirSynced <- syncDir(filepath.Dir(path)) }()
	// The summary comes with the first turn (TurnStarted): a session
	// without a turn is not listed, and a summary of 0 turns left by a
	// power loss could hide one that has turns.
	return l, nil
}

// Open opens the log of session id for appending and loads it. It writes
// nothing: call Resume to continue the session, or Close to leave the log
// as it was. It fails with ErrNotFound, ErrBusy or a *CorruptError.
func (st *Store) Open(id string) (*Log, *Session, error) {
	if !ValidID(id) {
		return nil, nil, fmt.Errorf("%q is not a session id", id)
	}
	path := st.LogPath(id)
	f, err := statefile.Open(st.dir, st.logName(id), os.O_RDWR|os.O_APPEND, 0, statefile.NoLinks)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, ErrNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("opening the session log: %w", err)
	}
	if err := lockFile(f); err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	s, repair, validEnd, err := load(id, path, f)
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	l := newLog(st, id, path, f, validEnd)
	l.repair, l.validEnd = repair, validEnd
	l.sum = summary{V: formatVersion, SessionID: id, Cwd: s.Cwd, Title: s.Title, CreatedAt: formatTime(s.Created), Turns: s.Turns}
	return l, s, nil
}

func newLog(st *Store, id, path string, f *os.File, size int64) *Log {
	l := &Log{st: st, id: id, path: path, f: f, size: size}
	l.enc = json.NewEncoder(&l.buf)
	l.enc.SetEscapeHTML(false)
	return l
}

// Path is the log's file.
func (l *Log) Path() string { return l.path }

// Resume prepares an opened log for appending: it cuts off a torn last
// line, writes the synthetic results and the end of a turn the log left
// open (as Open's Session already shows them), and records that the
// session was resumed with model. It fsyncs.
func (l *Log) Resume(model string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return os.ErrClosed
	}
	fi, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("resuming the session log: %w", err)
	}
	if fi.Size() > l.validEnd {
		if err := l.f.Truncate(l.validEnd); err != nil {
			return fmt.Errorf("cutting the torn last line of %s: %w", l.path, err)
		}
	}
	l.size = l.validEnd
	recs := append(l.repair, &record{T: recResume, Model: model, At: stamp(now())})
	l.repair = nil
	if err := l.appendLocked(true, recs...); err != nil {
		return err
	}
	return l.st.writeSummary(l.sum)
}

// TurnStarted records the start of a turn and updates the summary (turn
// count, and the title on the first prompt of a client's turn).
func (l *Log) TurnStarted(turnID, requestID string, origin *protocol.Origin, prompt string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.appendLocked(false, &record{T: recTurn, Turn: turnID, Request: requestID, Origin: origin, At: stamp(now())}); err != nil {
		return err
	}
	l.sum.Turns++
	if l.sum.Title == "" && origin == nil {
		l.sum.Title = Title(prompt)
	}
	return l.st.writeSummary(l.sum)
}

// Message records one message the turn added to the history. failed marks
// a tool result whose call did not succeed (the transcript shows it so).
func (l *Log) Message(turnID string, m provider.Message, failed bool) error {
	return l.append(false, &record{T: recMsg, Turn: turnID, Msg: &m, Failed: failed})
}

// TurnEnded records the end of a turn and fsyncs: once it returns, the
// turn survives a crash.
func (l *Log) TurnEnded(turnID string, e End) error {
	return l.append(true, &record{T: recEnd, Turn: turnID, Outcome: e.Outcome, Code: e.Code, Message: e.Message,
		Steps: e.Steps, Usage: e.Usage, At: stamp(now())})
}

// Queue changes are recorded one record each, so the log grows with what
// changed, not with the size of the queue, and without an fsync of their
// own: the next turn boundary makes them durable. A resumed session gets
// the queue they leave (a clear empties it).

// QueueAdded records a prompt that joined the end of the queue.
func (l *Log) QueueAdded(q Queued) error {
	return l.append(false, &record{T: recQueueAdd, At: stamp(now()), Q: &q})
}

// QueueUpdated records that the queued prompt id was replaced by prompt,
// at its new revision.
func (l *Log) QueueUpdated(id string, revision int64, prompt string) error {
	return l.append(false, &record{T: recQueueUpdate, At: stamp(now()), Q: &Queued{QueueID: id, Revision: revision, Prompt: prompt}})
}

// QueueMoved records that the queued prompt id, at its new revision, now
// precedes the entry before ("": it is last).
func (l *Log) QueueMoved(id string, revision int64, before string) error {
	return l.append(false, &record{T: recQueueMove, At: stamp(now()), Q: &Queued{QueueID: id, Revision: revision}, Before: before})
}

// QueueRemoved records that the prompt id left the queue: removed, or
// taken to run.
func (l *Log) QueueRemoved(id string) error {
	return l.append(false, &record{T: recQueueRemove, At: stamp(now()), Q: &Queued{QueueID: id}})
}

// RuleGranted records a session approval rule the user granted, and
// fsyncs: a resumed session keeps it (until a clear).
func (l *Log) RuleGranted(r protocol.Rule) error {
	return l.append(true, &record{T: recRule, At: stamp(now()), Rule: &r})
}

// RuleRevoked records that the user revoked the session rule key (one
// granted, or one of tools.allow for this session only), and fsyncs: a
// resumed session stays without it.
func (l *Log) RuleRevoked(key string) error {
	return l.append(true, &record{T: recUnrule, At: stamp(now()), Rule: &protocol.Rule{Key: key}})
}

// Cleared records that the history and the usage totals were dropped, and
// fsyncs.
func (l *Log) Cleared() error {
	return l.append(true, &record{T: recClear, At: stamp(now())})
}

// Compacted records a compaction and fsyncs: the first removed messages
// of the history recorded so far (the oldest) are replaced by messages,
// the summary that stands for them. What follows them, including messages
// of the running turn already recorded, stays. messages is not retained.
func (l *Log) Compacted(messages []provider.Message, removed int) error {
	return l.Replaced(0, removed, messages)
}

// Replaced records that the removed messages of the history that start at
// index from were replaced by messages (none for a trim), and fsyncs. It is
// the general form of Compacted: the session uses it when a turn's end
// leaves a history other than the recorded one plus the turn's messages
// (compaction, trimming). messages is not retained.
func (l *Log) Replaced(from, removed int, messages []provider.Message) error {
	return l.append(true, &record{T: recCompact, From: from, Removed: removed, Messages: messages, At: stamp(now())})
}

// Sync flushes the log to stable storage.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return os.ErrClosed
	}
	return l.syncLocked()
}

// Close fsyncs and closes the log, releasing its lock. The log of a session
// created here that never started a turn is removed, so abandoned starts
// leave nothing behind.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	if l.fresh && l.sum.Turns == 0 && l.stopped == nil {
		// Removed below: nothing to make durable.
		_ = l.dirSyncedLocked() // the goroutine ends before Close returns
		_ = l.f.Close()
		l.f = nil
		_ = os.Remove(filepath.Join(l.st.SessionDir(l.id), SummaryName))
		_ = os.Remove(l.path)
		_ = os.Remove(l.st.SessionDir(l.id)) // only when empty
		return nil
	}
	return l.closeFileLocked()
}

func (l *Log) closeFile() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closeFileLocked()
}

func (l *Log) closeFileLocked() error {
	if l.f == nil {
		return nil
	}
	err := l.syncLocked()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

func (l *Log) append(sync bool, recs ...*record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.appendLocked(sync, recs...)
}

// appendLocked writes recs in one write and, with sync, fsyncs. A failure
// is undone and stops the log.
func (l *Log) appendLocked(sync bool, recs ...*record) error {
	if l.f == nil {
		return os.ErrClosed
	}
	if l.stopped != nil {
		return ErrStopped
	}
	l.buf.Reset()
	for _, r := range recs {
		start := l.buf.Len()
		if err := l.enc.Encode(r); err != nil {
			return fmt.Errorf("encoding a %s record: %w", r.T, err)
		}
		if n := l.buf.Len() - start; n > MaxRecordBytes {
			// A record no load would read: stop here, keeping a log
			// that resumes up to its last record, rather than leave a
			// hole in the history.
			err := fmt.Errorf("a %s record of %d bytes is over the %d bytes a record may have", r.T, n, MaxRecordBytes)
			l.stopped = err
			return fmt.Errorf("writing %s: %w", l.path, err)
		}
	}
	n, err := l.f.Write(l.buf.Bytes())
	if err == nil && sync {
		err = l.syncLocked()
	}
	if err != nil {
		l.stop(err)
		return fmt.Errorf("writing %s: %w", l.path, err)
	}
	l.size += int64(n)
	if l.buf.Cap() > 1<<20 {
		l.buf = bytes.Buffer{} // do not keep a large record's buffer
		l.enc = json.NewEncoder(&l.buf)
		l.enc.SetEscapeHTML(false)
	}
	return nil
}

// syncLocked fsyncs the log and, the first time after Create, its
// directory, so the log's name survives a power loss as its records do.
func (l *Log) syncLocked() error {
	if err := l.f.Sync(); err != nil {
		return err
	}
	return l.dirSyncedLocked()
}

// dirSyncedLocked waits for the fsync of the log's directory that Create
// started, once.
func (l *Log) dirSyncedLocked() error {
	if l.dirSynced == nil {
		return nil
	}
	err := <-l.dirSynced
	l.dirSynced = nil
	if err != nil {
		return fmt.Errorf("syncing the directory of %s: %w", l.path, err)
	}
	return nil
}

// stop ends recording after a failed write, cutting off whatever part of
// the write landed so the log ends with a complete record.
func (l *Log) stop(cause error) {
	l.stopped = cause
	if err := l.f.Truncate(l.size); err == nil {
		_ = l.f.Sync()
	}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
