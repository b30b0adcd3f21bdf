package chatlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/scv-cli/scv/shared/statefile"
	"github.com/scv-cli/scv/shared/textcut"
)

// Bounds of the reader.
const (
	// MaxReadBytes is the most of the log one call reads.
	MaxReadBytes = 64 << 20
	// MaxMessageChars bounds the characters Read shows of one message.
	MaxMessageChars = 8000
	// DefaultSearchLimit, MaxSearchLimit, DefaultEpisodesLimit,
	// MaxEpisodesLimit and DefaultReadLimit are the list sizes.
	DefaultSearchLimit   = 10
	MaxSearchLimit       = 100
	DefaultEpisodesLimit = 20
	MaxEpisodesLimit     = 100
	DefaultReadLimit     = 30
	// ownerStartChars is how much of the owner's first message an
	// episode listing shows.
	ownerStartChars = 120
	// excerptBefore and excerptAfter bound a search excerpt, in bytes.
	excerptBefore = 80
	excerptAfter  = 200
	// timeLayout shows a message's local time.
	timeLayout = time.RFC3339
)

// Reader reads one conversation's log. Its methods are safe for concurrent
// use.
type Reader struct {
	dir string
	loc *time.Location
	max int64
}

// ReaderOptions configure a Reader.
type ReaderOptions struct {
	// Location is the zone times are shown in; nil is time.Local.
	Location *time.Location
	// MaxBytes bounds what one call reads; 0 is MaxReadBytes.
	MaxBytes int64
}

// NewReader returns a reader of the log in dir.
func NewReader(dir string, opts ReaderOptions) *Reader {
	r := &Reader{dir: dir, loc: opts.Location, max: opts.MaxBytes}
	if r.loc == nil {
		r.loc = time.Local
	}
	if r.max <= 0 {
		r.max = MaxReadBytes
	}
	return r
}

// Episode describes one episode.
type Episode struct {
	ID       string `json:"id"`
	First    string `json:"first,omitempty"`
	Last     string `json:"last,omitempty"`
	Messages int    `json:"messages"`
	// OwnerStart is the start of the owner's first message.
	OwnerStart string `json:"owner_start,omitempty"`
	// Ended says whether /new ended the episode.
	Ended bool `json:"ended_by_new"`
	// Partial says the episode was larger than what the call could read,
	// so its counts cover only its beginning.
	Partial bool `json:"partial,omitempty"`

	nextIndex int
}

// EpisodesQuery selects episodes: Before keeps those started before a
// date, After those started on or after one (YYYY-MM-DD, empty for no
// bound); Limit is at most MaxEpisodesLimit, 0 for DefaultEpisodesLimit.
type EpisodesQuery struct {
	Before, After string
	Limit         int
}

// EpisodesResult lists episodes newest first; More says there are more
// than were listed.
type EpisodesResult struct {
	Episodes []Episode `json:"episodes"`
	More     bool      `json:"more"`
}

// Episodes lists the episodes q selects, newest first.
func (r *Reader) Episodes(q EpisodesQuery) (EpisodesResult, error) {
	limit := clampLimit(q.Limit, DefaultEpisodesLimit, MaxEpisodesLimit)
	for _, d := range []string{q.Before, q.After} {
		if d != "" {
			if _, err := ParseDay(d); err != nil {
				return EpisodesResult{}, err
			}
		}
	}
	ids, err := r.list()
	if err != nil {
		return EpisodesResult{}, err
	}
	res := EpisodesResult{Episodes: []Episode{}}
	budget := r.max
	for _, id := range ids {
		day := id.Day()
		if (q.Before != "" && day >= q.Before) || (q.After != "" && day < q.After) {
			continue
		}
		if len(res.Episodes) == limit || budget <= 0 {
			res.More = true
			break
		}
		data, partial, err := r.readEpisode(id, budget, false)
		if err != nil {
			return res, err
		}
		budget -= int64(len(data))
		e := r.summarizeData(id, data)
		e.Partial = partial
		res.Episodes = append(res.Episodes, e)
	}
	return res, nil
}

// summarizeData describes an episode from its content without decoding
// every line: the first records (up to the owner's first message) and the
// last ones (the end record and the last message). The count is the last
// message's index plus one, as the writer numbers messages in order.
func (r *Reader) summarizeData(id EpisodeID, data []byte) Episode {
	e := Episode{ID: id.String()}
	eachLine(data, func(rec Record) bool {
		if rec.End != "" {
			return true
		}
		if e.First == "" {
			e.First = r.show(rec.Time)
		}
		if rec.Who == Owner {
			e.OwnerStart = start(rec.Message)
			return false
		}
		return true
	})
	eachLineBack(data, func(rec Record) bool {
		if rec.End != "" {
			e.Ended = true
			return true
		}
		e.Last = r.show(rec.Time)
		e.Messages = rec.Index + 1
		e.nextIndex = rec.Index + 1
		return false
	})
	return e
}

// start is the beginning of what a message says.
func start(m Message) string {
	s := m.Text
	if s == "" {
		s = m.Transcript
	}
	if s == "" && len(m.Files) > 0 {
		s = "[file] " + m.Files[0].Name
	}
	s = strings.Join(strings.Fields(s), " ")
	if cut := textcut.Runes(s, ownerStartChars); cut != s {
		return cut + "…"
	}
	return s
}

// summarize describes the episode id from its last records: whether /new
// ended it, and the index its next message gets. It reads at most the
// last 2 MiB, enough for two whole records.
func (r *Reader) summarize(id EpisodeID) (Episode, error) {
	data, _, err := r.readEpisode(id, 2*MaxLineBytes, true)
	if err != nil {
		return Episode{}, err
	}
	e := Episode{ID: id.String()}
	eachLineBack(data, func(rec Record) bool {
		if rec.End != "" {
			e.Ended = true
		} else {
			e.nextIndex = rec.Index + 1
		}
		return false
	})
	return e, nil
}

// list returns the log's episodes, newest first. Anything in the log's
// folders that is not an episode file of a valid ID is passed over.
func (r *Reader) list() ([]EpisodeID, error) {
	years, err := readDirs(r.dir)
	if err != nil {
		return nil, err
	}
	var ids []EpisodeID
	for _, y := range years {
		if len(y) != 4 {
			continue
		}
		weeks, err := readDirs(filepath.Join(r.dir, y))
		if err != nil {
			return nil, err
		}
		for _, w := range weeks {
			ents, err := os.ReadDir(filepath.Join(r.dir, y, w))
			if err != nil {
				return nil, fmt.Errorf("listing the chat log: %w", err)
			}
			for _, f := range ents {
				name, ok := strings.CutSuffix(f.Name(), Ext)
				if !ok || !f.Type().IsRegular() {
					continue
				}
				if id, err := ParseEpisodeID(path.Join(y, w, name)); err == nil {
					ids = append(ids, id)
				}
			}
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].Start.After(ids[j].Start) })
	return ids, nil
}

// readDirs returns the names of the real directories in dir; none when dir
// does not exist (a log nothing was written to yet).
func readDirs(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the chat log: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// readEpisode reads at most max bytes of the episode id: its beginning, or
// with tail its end (from the start of a line). partial says the episode
// is larger.
func (r *Reader) readEpisode(id EpisodeID, max int64, tail bool) ([]byte, bool, error) {
	f, err := statefile.Open(r.dir, id.Path(), os.O_RDONLY, 0, statefile.NoLinks)
	if err != nil {
		return nil, false, fmt.Errorf("reading the chat log episode %s: %w", id, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("reading the chat log episode %s: %w", id, err)
	}
	size := fi.Size()
	if size <= max {
		data, err := io.ReadAll(io.LimitReader(f, max))
		if err != nil {
			return nil, false, fmt.Errorf("reading the chat log episode %s: %w", id, err)
		}
		return data, false, nil
	}
	off := int64(0)
	if tail {
		off = size - max
	}
	data := make([]byte, max)
	n, err := f.ReadAt(data, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, fmt.Errorf("reading the chat log episode %s: %w", id, err)
	}
	data = data[:n]
	if tail {
		// The first line is most likely cut: start after it.
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	} else if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	}
	return data, true, nil
}

// eachLine calls fn with each record of data in order, skipping lines
// that do not decode, until fn returns false.
func eachLine(data []byte, fn func(Record) bool) {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if rec, err := DecodeLine(line); err == nil && !fn(rec) {
			return
		}
	}
}

// eachLineBack is eachLine from the last line to the first.
func eachLineBack(data []byte, fn func(Record) bool) {
	eachRawLineBack(data, func(line []byte) bool {
		if rec, err := DecodeLine(line); err == nil {
			return fn(rec)
		}
		return true
	})
}

// eachRawLineBack calls fn with each line of data from the last, until fn
// returns false.
func eachRawLineBack(data []byte, fn func([]byte) bool) {
	eachLineSpanBack(data, func(start, end int) bool { return fn(data[start:end]) })
}

// eachLineSpanBack calls fn with the bounds of each line of data, from the
// last, until fn returns false.
func eachLineSpanBack(data []byte, fn func(start, end int) bool) {
	end := len(bytes.TrimRight(data, "\n"))
	for end > 0 {
		start := bytes.LastIndexByte(data[:end], '\n') + 1
		if !fn(start, end) {
			return
		}
		end = start - 1
	}
}

func (r *Reader) show(t time.Time) string { return t.In(r.loc).Format(timeLayout) }

func clampLimit(n, def, max int) int {
	switch {
	case n <= 0:
		return def
	case n > max:
		return max
	}
	return n
}
