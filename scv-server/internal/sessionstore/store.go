// Package sessionstore keeps sessions on disk so that a later server can
// resume them: their history, usage totals and transcript.
//
// Layout, under the state directory ($SCV_HOME/state):
//
//	sessions/<session id>/log.jsonl     the session's append-only log
//	sessions/<session id>/summary.json  a small sidecar for session.list
//
// (Tools keep their own per-session files beside them, such as the bash
// tool's spill/ directory.) Directories are 0700, files 0600.
//
// The log is JSON Lines: one record per line, appended in one write(2)
// each, never rewritten. The first record is the session's meta record;
// then come turn starts, one record per canonical history message, turn
// ends (outcome, steps, usage), clears, compactions and resumes. See
// record for the fields. Records are fsynced at turn boundaries (turn end,
// clear, compaction, resume, close), so a crash or kill -9 loses at most
// the turn in flight, and a power loss at most what came after the last
// boundary.
//
// Loading replays the records. A last line without its newline is a torn
// write: it is ignored, and cut off before the log is appended to again. Any
// other line that is not a valid record makes the log corrupt, an error that
// names the file and the line. A turn that has a start but no end was
// interrupted: each of its tool calls without a result gets a synthetic
// result (InterruptedResult) so the provider accepts the history, and its
// transcript items are marked interrupted. Resuming writes those synthetic
// results and the turn's end into the log, so the repair happens once.
//
// summary.json is rewritten atomically (without fsync) at every turn start
// and resume; it holds what List needs besides the log's size and
// modification time (which are the session's bytes and updated time), so
// listing never reads a log. A session without a readable summary is listed
// from its log instead.
//
// A log is open for appending in one process at a time: Create and Open
// take an exclusive flock on it (on Unix), released when the process exits
// however it exits.
package sessionstore

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/statefile"

	"github.com/scv-cli/scv/shared/textcut"
)

// File and directory names of a stored session.
const (
	SessionsDirName = "sessions"
	LogName         = "log.jsonl"
	SummaryName     = "summary.json"
)

// FileMode is the mode of every file the store writes.
const FileMode fs.FileMode = 0o600

// TitleRunes bounds a session's title (its first prompt, on one line).
const TitleRunes = 80

// InterruptedResult is the synthetic result of a tool call that has no
// result because its turn was interrupted (the model reads it).
const InterruptedResult = "interrupted; it may or may not have run"

// formatVersion is the log's format, recorded in its meta record.
const formatVersion = 1

// Errors of Open and Load.
var (
	// ErrNotFound is a session id the store has no log for.
	ErrNotFound = errors.New("no stored session has this id")
	// ErrBusy is a log another process has open for appending.
	ErrBusy = errors.New("the session is open in another server process")
)

// CorruptError is a log that cannot be read: a record in the middle of it
// is not valid.
type CorruptError struct {
	Path string
	Line int
	Err  error
}

func (e *CorruptError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err) }
func (e *CorruptError) Unwrap() error { return e.Err }

// Store is the sessions directory of a state directory.
type Store struct {
	dir string
}

// New returns the store of stateDir ($SCV_HOME/state). Nothing is created
// until a session is.
func New(stateDir string) *Store {
	return &Store{dir: filepath.Join(stateDir, SessionsDirName)}
}

// Dir is the sessions directory.
func (st *Store) Dir() string { return st.dir }

// SessionDir is the directory of session id.
func (st *Store) SessionDir(id string) string { return filepath.Join(st.dir, id) }

// LogPath is the log of session id.
func (st *Store) LogPath(id string) string { return filepath.Join(st.dir, id, LogName) }

// logName is the log of session id, relative to the sessions directory:
// every file of the store is opened inside that directory (statefile),
// never through a symbolic link.
func (st *Store) logName(id string) string { return filepath.Join(id, LogName) }

// ValidID reports whether id is a session id: a UUID in its canonical
// lowercase form, which is also a safe file name.
func ValidID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.String() == id
}

// Meta describes a session when it is created.
type Meta struct {
	ID      string
	Cwd     string // canonical workspace
	Model   string
	Created time.Time
}

// Session is a stored session as loaded.
type Session struct {
	Meta
	// History is the canonical history to continue from: every tool call
	// has a result.
	History []provider.Message
	Usage   protocol.Usage
	// Turns counts every turn the log has started, interrupted ones
	// included.
	Turns int
	// Title is the first prompt, on one line, shortened to TitleRunes.
	Title string
	// Updated is the log's modification time; Bytes its size.
	Updated time.Time
	Bytes   int64
	// Replay is the transcript since the last clear, oldest first.
	Replay []protocol.ReplayItem
	// Interrupted is the id of the turn the log left open, "" when none.
	Interrupted string
	// Rules are the session approval rules granted since the last clear,
	// in the order granted, one per key.
	Rules []protocol.Rule
	// Revoked are the rule keys the user revoked since the last clear and
	// did not grant again: rules of the configuration with these keys stay
	// off when the session is resumed.
	Revoked []string
	// Queue is the prompt queue as last recorded, in order.
	Queue []Queued
}

// summary is summary.json.
type summary struct {
	V         int    `json:"v"`
	SessionID string `json:"session_id"`
	Cwd       string `json:"cwd"`
	Title     string `json:"title"`
	CreatedAt string `json:"created_at"`
	Turns     int    `json:"turns"`
}

func (st *Store) writeSummary(s summary) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	// Without fsync (issue 23: two fewer before a turn's first model
	// request): the summary only spares List reading logs. A power loss
	// can leave it missing or empty, and then List reads the log instead;
	// an older one left in its place still has a turn (none is written
	// with 0), so the session stays listed.
	return atomicfile.WriteFileNoSync(filepath.Join(st.dir, s.SessionID, SummaryName), append(b, '\n'), FileMode)
}

// List returns the sessions of the workspace cwd (compared exactly: pass
// the canonical path) that have at least one turn, most recently updated
// first, at most limit of them (limit ≤ 0: all).
func (st *Store) List(cwd string, limit int) ([]protocol.SessionSummary, error) {
	ents, err := os.ReadDir(st.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []protocol.SessionSummary{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	type found struct {
		sum     protocol.SessionSummary
		updated time.Time
	}
	dir, err := statefile.OpenDir(st.dir, statefile.NoLinks)
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	defer dir.Close()
	var all []found
	for _, ent := range ents {
		id := ent.Name()
		if !ent.IsDir() || !ValidID(id) {
			continue
		}
		sum, ok := readSummary(dir, id)
		if !ok {
			s, err := st.Load(id)
			if err != nil {
				continue
			}
			sum = summary{SessionID: id, Cwd: s.Cwd, Title: s.Title, CreatedAt: formatTime(s.Created), Turns: s.Turns}
		}
		if sum.Cwd != cwd || sum.Turns == 0 || sum.SessionID != id {
			continue
		}
		fi, err := os.Lstat(st.LogPath(id))
		if err != nil || !fi.Mode().IsRegular() {
			continue // a log that cannot be resumed is not listed
		}
		all = append(all, found{updated: fi.ModTime(), sum: protocol.SessionSummary{
			SessionID: id, Cwd: sum.Cwd, Title: sum.Title, CreatedAt: sum.CreatedAt,
			UpdatedAt: formatTime(fi.ModTime()), Turns: sum.Turns, Bytes: fi.Size(),
		}})
	}
	slices.SortFunc(all, func(a, b found) int {
		if c := b.updated.Compare(a.updated); c != 0 {
			return c
		}
		if c := cmp.Compare(b.sum.CreatedAt, a.sum.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.sum.SessionID, b.sum.SessionID)
	})
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	out := make([]protocol.SessionSummary, len(all))
	for i, f := range all {
		out[i] = f.sum
	}
	return out, nil
}

// maxSummaryBytes bounds summary.json: a title of 80 characters, a
// workspace path and a few numbers.
const maxSummaryBytes = 64 << 10

func readSummary(dir *statefile.Dir, id string) (summary, bool) {
	b, err := dir.ReadFile(filepath.Join(id, SummaryName), maxSummaryBytes)
	if err != nil {
		return summary{}, false
	}
	var s summary
	if json.Unmarshal(b, &s) != nil || s.SessionID == "" {
		return summary{}, false
	}
	return s, true
}

// Load reads session id without opening it for appending (no lock, no
// repair): an interrupted turn is repaired in memory only.
func (st *Store) Load(id string) (*Session, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("%q is not a session id", id)
	}
	path := st.LogPath(id)
	f, err := statefile.Open(st.dir, st.logName(id), os.O_RDONLY, 0, statefile.NoLinks)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, _, _, err := load(id, path, f)
	return s, err
}

// ensureDirs creates the sessions directory and a session's, 0700.
func (st *Store) ensureDirs(id string) error {
	if err := paths.EnsureDir(st.dir); err != nil {
		return err
	}
	return paths.EnsureDir(st.SessionDir(id))
}

// Title returns a session title for prompt: on one line, at most
// TitleRunes runes, an ellipsis marking a cut.
func Title(prompt string) string {
	s := strings.Join(strings.Fields(prompt), " ")
	if textcut.Runes(s, TitleRunes) == s {
		return s
	}
	return strings.TrimRight(textcut.Runes(s, TitleRunes-1), " ") + "…"
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func now() time.Time { return time.Now() }
