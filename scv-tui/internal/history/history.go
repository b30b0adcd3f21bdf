// Package history keeps the prompt history of one workspace (the prompts
// Up and Down recall) in $SCV_HOME/state/prompt-history/<hash>.jsonl, where
// <hash> names the workspace's canonical path.
//
// The file holds one JSON object per line, {"prompt":"..."}, oldest first.
// A prompt is added with one append; a last line without its newline (a
// write torn by a crash) and lines that are not entries are ignored when
// the file is read, and the next write then rewrites the file atomically
// without them. The history is bounded by the bytes of its prompts and by
// their number, dropping the oldest; the file is rewritten to the bounds
// once it has grown a quarter past them, so a write is an append nearly
// always.
//
// Two TUIs in one workspace both append safely; a rewrite by one drops
// what the other appended since it last read the file (history is a
// convenience, not a record).
package history

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/statefile"
)

// Default bounds, the protocol's advisory max_prompt_history_bytes and
// max_prompt_history_items, used until SetBounds.
const (
	DefaultMaxBytes int64 = 1 << 20
	DefaultMaxItems       = 200
)

// DirName is the directory under $SCV_HOME/state that holds the files.
const DirName = "prompt-history"

// Store is the prompt history of one workspace. It is safe for concurrent
// use.
type Store struct {
	path string

	mu       sync.Mutex
	entries  []string
	bytes    int64 // sum of len(entries[i])
	maxBytes int64
	maxItems int
	// What the file holds beyond the entries, to decide between an
	// append and a rewrite.
	fileLines int
	fileBytes int64
	dirty     bool // the file has torn or bad lines: rewrite it
}

// Path returns the history file of workspace under home ($SCV_HOME).
// The workspace is made absolute and its symlinks are resolved (when it
// exists), so every spelling of one directory shares a history.
func Path(home, workspace string) (string, error) {
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return "", fmt.Errorf("prompt history: %w", err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(home, paths.StateDirName, DirName, hex.EncodeToString(sum[:16])+".jsonl"), nil
}

// Open reads the history of workspace under home, creating its directory
// (0700). A missing file is an empty history.
func Open(home, workspace string) (*Store, error) {
	p, err := Path(home, workspace)
	if err != nil {
		return nil, err
	}
	return OpenFile(p)
}

// OpenFile reads the history kept in the file at path, creating its
// directory (0700).
func OpenFile(path string) (*Store, error) {
	if err := paths.EnsureDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("prompt history: %w", err)
	}
	s := &Store{path: path, maxBytes: DefaultMaxBytes, maxItems: DefaultMaxItems}
	data, cut, err := readTail(path, maxReadBytes)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("cannot read the prompt history: %w", err)
	}
	entries, clean := Parse(data)
	clean = clean && !cut
	s.fileLines, s.fileBytes, s.dirty = len(entries), int64(len(data)), !clean
	for _, e := range entries {
		s.entries = append(s.entries, e)
		s.bytes += int64(len(e))
	}
	s.trim()
	return s, nil
}

// File returns the path of the history file.
func (s *Store) File() string { return s.path }

// Entries returns the prompts, oldest first.
func (s *Store) Entries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.entries...)
}

// SetBounds sets the bounds (a value of 0 or less keeps the current one)
// and drops the oldest prompts past them. The file follows at the next Add.
func (s *Store) SetBounds(maxBytes int64, maxItems int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if maxBytes > 0 {
		s.maxBytes = maxBytes
	}
	if maxItems > 0 {
		s.maxItems = maxItems
	}
	s.trim()
}

// Add appends prompt unless it is blank or repeats the newest entry, and
// drops the oldest entries past the bounds. A prompt longer than the byte
// bound is not kept. The error says the file could not be written; the
// prompt is in the history in memory all the same.
func (s *Store) Add(prompt string) error {
	prompt = strings.ToValidUTF8(prompt, "\uFFFD")
	if strings.TrimSpace(prompt) == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.entries); n > 0 && s.entries[n-1] == prompt {
		return nil
	}
	if int64(len(prompt)) > s.maxBytes {
		return nil
	}
	s.entries = append(s.entries, prompt)
	s.bytes += int64(len(prompt))
	s.trim()
	line := encodeLine(nil, prompt)
	if s.dirty || s.fileLines+1 > s.maxItems+s.maxItems/4 || s.fileBytes+int64(len(line)) > s.maxBytes+s.maxBytes/4 {
		return s.rewrite()
	}
	return s.append(line)
}

// trim drops the oldest entries past the bounds.
func (s *Store) trim() {
	drop := 0
	for len(s.entries)-drop > s.maxItems || s.bytes > s.maxBytes {
		s.bytes -= int64(len(s.entries[drop]))
		drop++
	}
	if drop > 0 {
		s.entries = append(s.entries[:0:0], s.entries[drop:]...)
	}
}

// maxReadBytes bounds what is read of a history file: several times what
// the bounds keep. A longer file (it is never written so long) is read
// from its end, the newest prompts, and rewritten at the next Add.
const maxReadBytes = 8 * DefaultMaxBytes

// readTail reads the history file at path, never through a symbolic link
// nor blocking on a FIFO: whole when it holds at most limit bytes,
// otherwise its last limit bytes from the first line that starts in them
// (cut true).
func readTail(path string, limit int64) (data []byte, cut bool, err error) {
	f, err := statefile.Open(filepath.Dir(path), filepath.Base(path), os.O_RDONLY, 0, statefile.NoLinks)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	off := max(fi.Size()-limit, 0)
	data, err = io.ReadAll(io.NewSectionReader(f, off, limit))
	if err != nil {
		return nil, false, err
	}
	if off > 0 {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		} else {
			data = nil
		}
	}
	return data, off > 0, nil
}

func (s *Store) append(line []byte) error {
	f, err := statefile.Open(filepath.Dir(s.path), filepath.Base(s.path), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600, statefile.NoLinks)
	if err != nil {
		return fmt.Errorf("cannot save the prompt history: %w", err)
	}
	// One write, so a crash leaves at most a torn last line.
	_, werr := f.Write(line)
	cerr := f.Close()
	if werr != nil || cerr != nil {
		s.dirty = true
		return fmt.Errorf("cannot save the prompt history to %s: %w", s.path, firstErr(werr, cerr))
	}
	s.fileLines++
	s.fileBytes += int64(len(line))
	return nil
}

func (s *Store) rewrite() error {
	var buf []byte
	for _, e := range s.entries {
		buf = encodeLine(buf, e)
	}
	if err := atomicfile.WriteFile(s.path, buf, 0o600); err != nil {
		s.dirty = true
		return fmt.Errorf("cannot save the prompt history: %w", err)
	}
	s.fileLines, s.fileBytes, s.dirty = len(s.entries), int64(len(buf)), false
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// line is one entry of the file.
type line struct {
	Prompt *string `json:"prompt"`
}

// encodeLine appends the line of prompt, with its newline, to dst.
func encodeLine(dst []byte, prompt string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)              // keep prompts readable in the file
	_ = enc.Encode(line{Prompt: &prompt}) // a string always encodes
	return append(dst, b.Bytes()...)
}

// Parse returns the prompts of a history file, oldest first. clean is
// false when the file has anything else: a torn last line, a line that is
// not an entry, a blank prompt or a repeated one (which Parse drops, as
// Add would have).
func Parse(data []byte) (entries []string, clean bool) {
	clean = true
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			// A torn last line: the write that made it did not finish.
			return entries, false
		}
		raw := data[:i]
		data = data[i+1:]
		var l line
		if json.Unmarshal(raw, &l) != nil || l.Prompt == nil {
			clean = false
			continue
		}
		p := *l.Prompt
		if strings.TrimSpace(p) == "" || len(entries) > 0 && entries[len(entries)-1] == p {
			clean = false
			continue
		}
		entries = append(entries, p)
	}
	return entries, clean
}
