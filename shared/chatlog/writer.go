package chatlog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/statefile"
	"github.com/scv-cli/scv/shared/textcut"
)

// Writer appends to one conversation's log. One process writes a
// conversation's log (the chat bridge holds a lock per account); a Writer
// is safe for concurrent use within it.
type Writer struct {
	mu   sync.Mutex
	dir  string
	loc  *time.Location
	cur  *os.File // the open episode; nil when none is open
	id   EpisodeID
	next int // index of the open episode's next message
}

// WriterOptions configure a Writer.
type WriterOptions struct {
	// Location is the zone episode IDs are named in; nil is time.Local.
	Location *time.Location
}

// Ref locates a message: its episode and index.
type Ref struct {
	Episode string
	Index   int
}

// OpenWriter opens the log in dir (Dir), creating it with mode 0700. An
// episode left open (not ended by /new) goes on: the next message is
// appended to it.
func OpenWriter(dir string, opts WriterOptions) (*Writer, error) {
	if err := paths.EnsureDir(dir); err != nil {
		return nil, fmt.Errorf("opening the chat log: %w", err)
	}
	w := &Writer{dir: dir, loc: opts.Location}
	if w.loc == nil {
		w.loc = time.Local
	}
	r := NewReader(dir, ReaderOptions{Location: w.loc})
	eps, err := r.list()
	if err != nil {
		return nil, err
	}
	if len(eps) == 0 {
		return w, nil
	}
	newest := eps[0]
	sum, err := r.summarize(newest)
	if err != nil {
		return nil, err
	}
	if sum.Ended {
		return w, nil
	}
	if err := w.openEpisode(newest, false); err != nil {
		return nil, err
	}
	w.next = sum.nextIndex
	return w, nil
}

// Append adds m to the open episode, starting one named by m's time when
// none is open, and fsyncs it. Text fields over 200 KiB are cut. It
// returns where the message went.
func (w *Writer) Append(m Message) (Ref, error) {
	switch m.Who {
	case Owner, SCV, System:
	default:
		return Ref{}, fmt.Errorf("appending to the chat log: unknown writer %q", m.Who)
	}
	if m.Time.IsZero() {
		return Ref{}, errors.New("appending to the chat log: the message has no time")
	}
	m.Text = cutField(m.Text)
	m.Quote = cutField(m.Quote)
	m.Transcript = cutField(m.Transcript)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur == nil {
		if err := w.startEpisode(m.Time); err != nil {
			return Ref{}, err
		}
	}
	line, err := EncodeLine(Record{Message: m, Index: w.next})
	if err != nil {
		return Ref{}, err
	}
	if err := w.write(line); err != nil {
		return Ref{}, err
	}
	ref := Ref{Episode: w.id.String(), Index: w.next}
	w.next++
	return ref, nil
}

// CloseEpisode ends the open episode (the owner sent /new) at t; the next
// message starts a new one. Without an open episode it does nothing.
func (w *Writer) CloseEpisode(t time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur == nil {
		return nil
	}
	line, err := EncodeLine(Record{Message: Message{Time: t}, End: EndNew})
	if err != nil {
		return err
	}
	if err := w.write(line); err != nil {
		return err
	}
	err = w.cur.Close()
	w.cur = nil
	if err != nil {
		return fmt.Errorf("closing the chat log episode %s: %w", w.id, err)
	}
	return nil
}

// Close closes the open episode's file; the episode stays open for the
// next Writer.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur == nil {
		return nil
	}
	err := w.cur.Close()
	w.cur = nil
	return err
}

func (w *Writer) write(line []byte) error {
	if _, err := w.cur.Write(line); err != nil {
		return fmt.Errorf("writing the chat log episode %s: %w", w.id, err)
	}
	if err := w.cur.Sync(); err != nil {
		return fmt.Errorf("syncing the chat log episode %s: %w", w.id, err)
	}
	return nil
}

// startEpisode creates the episode file of a first message at t. An
// episode of the same second already there (a /new and a message within
// one second) moves the start on by a second.
func (w *Writer) startEpisode(t time.Time) error {
	id := NewEpisodeID(t.In(w.loc))
	for range 60 {
		if _, err := os.Lstat(filepath.Join(w.dir, id.Path())); errors.Is(err, os.ErrNotExist) {
			w.next = 0
			return w.openEpisode(id, true)
		}
		id.Start = id.Start.Add(time.Second)
	}
	return fmt.Errorf("starting a chat log episode at %s: episodes already start at each of the next 60 seconds", t.Format(time.RFC3339))
}

// openEpisode opens id for appending, creating it (and its folders) when
// create is set. A torn last line gets its newline, so the next record
// starts a line of its own.
func (w *Writer) openEpisode(id EpisodeID, create bool) error {
	rel := id.Path()
	dir := filepath.Dir(filepath.Join(w.dir, rel))
	flag := os.O_RDWR | os.O_APPEND
	if create {
		if err := paths.EnsureDir(dir); err != nil {
			return fmt.Errorf("starting a chat log episode: %w", err)
		}
		flag |= os.O_CREATE | os.O_EXCL
	}
	f, err := statefile.Open(w.dir, rel, flag, 0o600, statefile.NoLinks)
	if err != nil {
		return fmt.Errorf("opening the chat log episode %s: %w", id, err)
	}
	if create {
		if err := atomicfile.SyncDir(dir); err != nil {
			_ = f.Close()
			return fmt.Errorf("starting a chat log episode: syncing %s: %w", dir, err)
		}
	} else if err := endTornLine(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("opening the chat log episode %s: %w", id, err)
	}
	w.cur, w.id = f, id
	return nil
}

// endTornLine appends a newline when f's last byte is not one.
func endTornLine(f *os.File) error {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, fi.Size()-1); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	if _, err := f.Write([]byte{'\n'}); err != nil {
		return err
	}
	return f.Sync()
}

func cutField(s string) string {
	if len(s) <= maxFieldBytes {
		return s
	}
	return textcut.Prefix(s, maxFieldBytes) + "…"
}
