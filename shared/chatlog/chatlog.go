// Package chatlog is the on-disk chat log of one chat conversation (an
// account owner's direct chat on WeChat or Feishu): what the chat bridge
// writes as messages come and go, and what the chat tools (chat_history,
// chat_keep) read.
//
// A conversation's log lives in <archive>/<channel>/<account>/<conversation>/
// (Dir). It is split into episodes, one file each, named by the episode's
// ID <year>/<week>/<start> plus ".jsonl": the ISO week-year, the ISO week
// as its Monday and Sunday, and the local time of the first message, such as
// 2026/2026-09-21_2026-09-27/2026-09-26T14-04-05. An episode ends when the
// owner sends /new (Writer.CloseEpisode).
//
// An episode file holds one JSON record per line, appended and fsynced one
// at a time: a message, or the end record /new leaves. A crash can leave
// the last line torn; readers skip any line that does not decode, and the
// writer ends a torn line before appending, so a torn line never spoils the
// records around it. Files are 0600 and directories 0700.
//
// Files a user sent live in the chat media directory until they expire; a
// file kept for good (chat_keep) moves to the conversation's files/
// directory, and the move is recorded in kept.jsonl so the log shows the
// file's new place (RecordKept, Kept).
package chatlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Who wrote a message.
type Who string

// Writers of messages.
const (
	// Owner is the account's owner, the person SCV works for.
	Owner Who = "owner"
	// SCV is SCV's own reply.
	SCV Who = "scv"
	// System is a notice of the bridge (a command's answer, an error).
	System Who = "system"
)

// FileState is where a message's file is. A writer records FileMedia,
// FileNotSaved or FileSent; a reader reports FileKept and FileGone, which
// it derives.
type FileState string

// File states.
const (
	// FileMedia is a file the user sent, saved at Path in the chat media
	// directory.
	FileMedia FileState = "media"
	// FileKept is a file kept for good; Path is its new place.
	FileKept FileState = "kept"
	// FileGone is a media file removed after its retention.
	FileGone FileState = "gone"
	// FileNotSaved is a file the user sent that was never saved (too
	// large, or the download failed).
	FileNotSaved FileState = "not_saved"
	// FileSent is a file SCV sent; Path is where it was sent from.
	FileSent FileState = "sent"
)

// File is one file of a message.
type File struct {
	Name  string    `json:"name"`
	Path  string    `json:"path,omitempty"`
	State FileState `json:"state"`
}

// Message is one chat message.
type Message struct {
	// Time is when the message was sent or received.
	Time time.Time `json:"time"`
	Who  Who       `json:"who"`
	Text string    `json:"text,omitempty"`
	// Quote is the text of the message this one replies to.
	Quote string `json:"quote,omitempty"`
	Files []File `json:"files,omitempty"`
	// Voice marks a voice message; Transcript is its text, when the
	// platform gave one.
	Voice      bool   `json:"voice,omitempty"`
	Transcript string `json:"transcript,omitempty"`
}

// Record is one line of an episode file: a message with its index in the
// episode, or the end record (End set) that /new leaves.
type Record struct {
	Message
	// Index is the message's position in its episode, from 0.
	Index int `json:"i"`
	// End is why the episode ended ("new"); empty for a message.
	End string `json:"end,omitempty"`
}

// EndNew ends an episode closed by /new.
const EndNew = "new"

// MaxLineBytes bounds one record line. Append cuts a message's long fields
// so its line fits; readers skip longer lines.
const MaxLineBytes = 1 << 20

// maxFieldBytes bounds each text field Append stores.
const maxFieldBytes = 200 << 10

// EncodeLine encodes r as one line, newline included.
func EncodeLine(r Record) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encoding a chat log record: %w", err)
	}
	if len(b)+1 > MaxLineBytes {
		return nil, fmt.Errorf("a chat log record of %d bytes is over the %d-byte limit", len(b), MaxLineBytes)
	}
	return append(b, '\n'), nil
}

// DecodeLine decodes one line (without its newline). It refuses what a
// writer never writes: a line that is not one JSON object, a message
// without time or with an unknown writer or file state, a negative index.
func DecodeLine(line []byte) (Record, error) {
	var r Record
	if len(line) > MaxLineBytes {
		return r, errors.New("the line is over the length limit")
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return r, fmt.Errorf("the line is not a chat log record: %w", err)
	}
	if r.Time.IsZero() {
		return r, errors.New("the record has no time")
	}
	if r.End != "" {
		if r.End != EndNew {
			return r, fmt.Errorf("the end record names an unknown reason %q", r.End)
		}
		return r, nil
	}
	switch r.Who {
	case Owner, SCV, System:
	default:
		return r, fmt.Errorf("the message names an unknown writer %q", r.Who)
	}
	if r.Index < 0 {
		return r, errors.New("the message has a negative index")
	}
	for _, f := range r.Files {
		switch f.State {
		case FileMedia, FileNotSaved, FileSent:
		default:
			return r, fmt.Errorf("the message's file %q has an unknown state %q", f.Name, f.State)
		}
	}
	return r, nil
}

// Dir returns the log directory of a conversation:
// <archive>/<channel>/<account>/<conversation>. archive must be absolute;
// each other part must be a safe path segment (CheckSegment), so the
// result is always inside archive.
func Dir(archive, channel, account, conversation string) (string, error) {
	if !filepath.IsAbs(archive) {
		return "", fmt.Errorf("the chat archive %q is not an absolute path", archive)
	}
	for _, p := range [][2]string{{"channel", channel}, {"account", account}, {"conversation", conversation}} {
		if err := CheckSegment(p[1]); err != nil {
			return "", fmt.Errorf("the %s %w", p[0], err)
		}
	}
	return filepath.Join(filepath.Clean(archive), channel, account, conversation), nil
}

// MaxSegmentBytes bounds a channel, account or conversation name.
const MaxSegmentBytes = 128

// CheckSegment checks that s can name one directory of the archive or the
// media directory: 1 to 128 letters, digits and "._-@+=", not starting with
// a dot. Platform ids (Feishu's oc_…, WeChat's …@im.wechat) fit; a path
// separator, "..", or a hidden name cannot. Its error completes "the
// conversation …".
func CheckSegment(s string) error {
	if s == "" {
		return errors.New("is empty")
	}
	if len(s) > MaxSegmentBytes {
		return fmt.Errorf("is longer than %d bytes", MaxSegmentBytes)
	}
	if s[0] == '.' {
		return fmt.Errorf("%q starts with a dot", s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-@+=", c) >= 0) {
			return fmt.Errorf("%q has the character %q; use letters, digits and . _ - @ + =", s, c)
		}
	}
	return nil
}

// FilesDir returns the directory of a conversation's kept files.
func FilesDir(logDir string) string { return filepath.Join(logDir, "files") }
