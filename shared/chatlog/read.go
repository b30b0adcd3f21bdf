package chatlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/scv-cli/scv/shared/statefile"
	"github.com/scv-cli/scv/shared/textcut"
)

// Shown is one message as Read shows it.
type Shown struct {
	Index      int    `json:"index"`
	Time       string `json:"time"`
	Who        Who    `json:"who"`
	Text       string `json:"text,omitempty"`
	Quote      string `json:"quote,omitempty"`
	Files      []File `json:"files,omitempty"`
	Voice      bool   `json:"voice,omitempty"`
	Transcript string `json:"transcript,omitempty"`
	// Cut says the message was longer than MaxMessageChars characters.
	Cut bool `json:"cut,omitempty"`
}

// ReadResult is a page of an episode.
type ReadResult struct {
	Episode  string  `json:"episode"`
	Offset   int     `json:"offset"`
	Total    int     `json:"total"`
	Messages []Shown `json:"messages"`
	// More says messages follow the page.
	More bool `json:"more"`
	// Ended says /new ended the episode.
	Ended bool `json:"ended_by_new"`
	// Partial says the episode is larger than one call reads: Total counts
	// only its beginning.
	Partial bool `json:"partial,omitempty"`
}

// Read shows the messages of an episode from offset, at most limit (0 for
// DefaultReadLimit, at most MaxSearchLimit), each up to MaxMessageChars
// characters, with each file's state now.
func (r *Reader) Read(episode string, offset, limit int) (ReadResult, error) {
	id, err := ParseEpisodeID(episode)
	if err != nil {
		return ReadResult{}, err
	}
	if offset < 0 {
		return ReadResult{}, fmt.Errorf("offset %d is negative; use 0 for the episode's first message", offset)
	}
	limit = clampLimit(limit, DefaultReadLimit, MaxSearchLimit)
	data, partial, err := r.readEpisode(id, r.max, false)
	if errors.Is(err, fs.ErrNotExist) {
		return ReadResult{}, fmt.Errorf("there is no episode %s in this chat's log; list them with the episodes action", episode)
	}
	if err != nil {
		return ReadResult{}, err
	}
	kept, err := Kept(r.dir)
	if err != nil {
		return ReadResult{}, err
	}
	res := ReadResult{Episode: id.String(), Offset: offset, Messages: []Shown{}, Partial: partial}
	n := 0
	eachLine(data, func(rec Record) bool {
		if rec.End != "" {
			res.Ended = true
			return true
		}
		if n >= offset && len(res.Messages) < limit {
			res.Messages = append(res.Messages, r.shown(rec, kept))
		}
		n++
		return true
	})
	res.Total = n
	res.More = offset+len(res.Messages) < n
	return res, nil
}

// shown prepares one message: its fields within MaxMessageChars, its
// files' states now.
func (r *Reader) shown(rec Record, kept map[string]string) Shown {
	s := Shown{Index: rec.Index, Time: r.show(rec.Time), Who: rec.Who, Voice: rec.Voice}
	left := MaxMessageChars
	cut := func(v string) string {
		out := textcut.Runes(v, left)
		if out != v {
			s.Cut = true
		}
		left -= len([]rune(out))
		return out
	}
	s.Text, s.Quote, s.Transcript = cut(rec.Text), cut(rec.Quote), cut(rec.Transcript)
	for _, f := range rec.Files {
		s.Files = append(s.Files, fileNow(f, kept))
	}
	return s
}

// fileNow is where a logged file is now: kept, still in the chat media,
// or gone after its retention.
func fileNow(f File, kept map[string]string) File {
	if f.State != FileMedia {
		return f
	}
	if to, ok := kept[f.Path]; ok {
		return File{Name: f.Name, Path: to, State: FileKept}
	}
	if _, err := os.Lstat(f.Path); err != nil {
		return File{Name: f.Name, State: FileGone}
	}
	return f
}

// keptIndex is the file, in the log directory, that records kept files.
const keptIndex = "kept.jsonl"

// maxKeptBytes bounds the kept-file index a reader loads.
const maxKeptBytes = 16 << 20

type keptRecord struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// RecordKept records in the log directory that the media file from was
// kept as to, appending one fsynced line to kept.jsonl.
func RecordKept(logDir, from, to string) error {
	line, err := json.Marshal(keptRecord{From: from, To: to})
	if err != nil {
		return err
	}
	f, err := statefile.Open(logDir, keptIndex, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600, statefile.NoLinks)
	if err != nil {
		return fmt.Errorf("recording a kept file: %w", err)
	}
	// A torn line of an earlier crash must not swallow this one.
	if _, err := f.Write(append(append([]byte{'\n'}, line...), '\n')); err != nil {
		_ = f.Close()
		return fmt.Errorf("recording a kept file: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("recording a kept file: %w", err)
	}
	return f.Close()
}

// Kept returns the kept files recorded in the log directory, by their
// former media path.
func Kept(logDir string) (map[string]string, error) {
	data, err := statefile.ReadFile(logDir, keptIndex, maxKeptBytes, statefile.NoLinks)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the kept files of the chat log: %w", err)
	}
	out := map[string]string{}
	for _, line := range splitLines(data) {
		var k keptRecord
		if json.Unmarshal(line, &k) == nil && filepath.IsAbs(k.From) && filepath.IsAbs(k.To) {
			out[k.From] = k.To
		}
	}
	return out, nil
}

func splitLines(data []byte) [][]byte {
	var out [][]byte
	eachRawLineBack(data, func(l []byte) bool {
		out = append(out, l)
		return true
	})
	// Oldest first, so a later record of the same file wins.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
