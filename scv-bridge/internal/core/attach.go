package core

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/store"
	"github.com/scv-cli/scv/shared/chatlog"
	"github.com/scv-cli/scv/shared/statefile"
)

// KindFile is the outbox kind of an Attachment: a file the model attached
// with chat_attach, sent after its reply's text.
const KindFile = "file"

// Attachment is the payload of an outbox row of kind KindFile.
type Attachment struct {
	Conversation string               `json:"conversation"`
	Record       chatlog.OutboxRecord `json:"record"`
}

// MaxFilesPerReply is how many attached files one reply carries (as
// chat_attach allows); more are not sent, and the reply says which.
const MaxFilesPerReply = 8

// MaxAttachmentBytes bounds a file read from the outbox (chat_attach
// copies at most 25 MiB).
const MaxAttachmentBytes = 25 << 20

// maxRecordBytes bounds a delivery record.
const maxRecordBytes = 64 << 10

// orphanAge is how old a folder of the outbox without a record (a crash
// during a copy) must be before it is removed.
const orphanAge = time.Hour

// attachKey is the outbox row key of a record: finding the record again
// (after a crash) queues nothing new.
func attachKey(r chatlog.OutboxRecord) string { return "attach:" + r.ID }

// outboxRecords reads the delivery records in the media outbox of this
// account's conversation conv, oldest first (attached first). Unreadable records are
// skipped (and logged): they are not this bridge's to remove.
func (c *Core) outboxRecords(conv string) []chatlog.OutboxRecord {
	dir := chatlog.OutboxDir(c.cfg.Home)
	ents, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			c.cfg.Log.Warn("the chat media outbox cannot be read", "err", err)
		}
		return nil
	}
	var out []chatlog.OutboxRecord
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		data, err := statefile.ReadFile(dir, e.Name(), maxRecordBytes, statefile.NoLinks)
		if err != nil {
			c.cfg.Log.Warn("an outbox record cannot be read", "record", e.Name(), "err", err)
			continue
		}
		var r chatlog.OutboxRecord
		if err := json.Unmarshal(data, &r); err != nil || r.ID+".json" != e.Name() {
			c.cfg.Log.Warn("an outbox record is not valid", "record", e.Name(), "err", err)
			continue
		}
		if r.Platform == c.cfg.Platform && r.Account == c.cfg.Account && (conv == "" || r.Conversation == conv) {
			out = append(out, r)
		}
	}
	// The id sorts by the second only: within one, the copy's time decides.
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// attachments returns the files to send with a reply in conv: the records
// not queued yet, at most MaxFilesPerReply, as outbox rows, and the names
// of the ones left out (their copies removed). Records whose row is
// already final (a crash after the send, before the cleanup) are cleaned
// up here.
func (c *Core) attachments(conv string) ([]store.Row, []chatlog.OutboxRecord, []string) {
	if c.cfg.Home == "" {
		return nil, nil, nil
	}
	var rows []store.Row
	var sent []chatlog.OutboxRecord
	var left []string
	for _, r := range c.outboxRecords(conv) {
		o, queued, err := c.st.RowByKey(attachKey(r))
		if err != nil {
			c.cfg.Log.Error("the outbox cannot be read", "err", err)
			return nil, nil, nil
		}
		if queued {
			if o.State == store.Sent || o.State == store.Dead {
				RemoveAttachment(c.cfg.Home, r)
			}
			continue
		}
		if len(rows) >= MaxFilesPerReply {
			c.cfg.Log.Warn("more files than one reply carries; not sent", "conversation", conv, "file", r.Name)
			left = append(left, r.Name)
			RemoveAttachment(c.cfg.Home, r)
			continue
		}
		payload, _ := json.Marshal(Attachment{Conversation: conv, Record: r})
		rows = append(rows, store.Row{Conversation: conv, Kind: KindFile, Payload: payload, Key: attachKey(r)})
		sent = append(sent, r)
	}
	return rows, sent, left
}

// withFiles adds the captions of the files sent and the names of those
// left out to a reply's text.
func withFiles(text string, sent []chatlog.OutboxRecord, left []string) string {
	var b strings.Builder
	b.WriteString(text)
	for _, r := range sent {
		if r.Caption != "" {
			fmt.Fprintf(&b, "\n\n%s: %s", r.Name, r.Caption)
		}
	}
	if len(left) > 0 {
		fmt.Fprintf(&b, "\n\n(%d more file(s) were not sent: a reply carries at most %d. Not sent: %s.)",
			len(left), MaxFilesPerReply, strings.Join(left, ", "))
	}
	return b.String()
}

// sentFiles are the files of a reply as the chat log records them: sent,
// from their original place.
func sentFiles(sent []chatlog.OutboxRecord) []chatlog.File {
	var out []chatlog.File
	for _, r := range sent {
		out = append(out, chatlog.File{Name: r.Name, Path: r.Source, State: chatlog.FileSent})
	}
	return out
}

// ReadAttachment reads the copy of r for sending, refusing anything but a
// regular file (opened without following links) at its place in the
// outbox, <outbox>/<id>/<name>, whose size and SHA-256 are the record's.
func ReadAttachment(home string, r chatlog.OutboxRecord) ([]byte, error) {
	dir := chatlog.OutboxDir(home)
	if err := chatlog.CheckSegment(r.ID); err != nil {
		return nil, fmt.Errorf("the outbox record's id %q is not valid: %w", r.ID, err)
	}
	if r.Name == "" || r.Name != filepath.Base(r.Name) || r.Name == "." || r.Name == ".." {
		return nil, fmt.Errorf("the outbox record's file name %q is not a plain name", r.Name)
	}
	if want := filepath.Join(dir, r.ID, r.Name); r.Path != want {
		return nil, fmt.Errorf("the outbox record's copy %q is not at its place %q", r.Path, want)
	}
	if r.Size <= 0 || r.Size > MaxAttachmentBytes {
		return nil, fmt.Errorf("the outbox record says %d bytes; a file must have 1 byte to %d MiB", r.Size, MaxAttachmentBytes>>20)
	}
	data, err := statefile.ReadFile(dir, filepath.Join(r.ID, r.Name), MaxAttachmentBytes, statefile.NoLinks)
	if err != nil {
		return nil, fmt.Errorf("read the file to send: %w", err)
	}
	sum := sha256.Sum256(data)
	if int64(len(data)) != r.Size || !bytes.Equal([]byte(hex.EncodeToString(sum[:])), []byte(strings.ToLower(r.SHA256))) {
		return nil, fmt.Errorf("the file to send (%d bytes) is not the one chat_attach copied (%d bytes, SHA-256 %s)",
			len(data), r.Size, r.SHA256)
	}
	return data, nil
}

// RemoveAttachment removes the copy of r, its folder and its record, once
// it is sent or refused. Removing the record last means a crash part way
// leaves a record whose row is final, which attachments cleans up.
func RemoveAttachment(home string, r chatlog.OutboxRecord) {
	if chatlog.CheckSegment(r.ID) != nil {
		return
	}
	dir := chatlog.OutboxDir(home)
	_ = os.RemoveAll(filepath.Join(dir, r.ID))
	_ = os.Remove(filepath.Join(dir, r.ID+".json"))
}

// SweepOutboxOrphans removes the folders of the media outbox that have no
// record and are older than an hour: copies a crash interrupted. It
// returns how many it removed.
func SweepOutboxOrphans(home string, now time.Time) int {
	dir := chatlog.OutboxDir(home)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, e.Name()+".json")); err == nil {
			continue
		}
		fi, err := e.Info()
		if err != nil || now.Sub(fi.ModTime()) < orphanAge {
			continue
		}
		if os.RemoveAll(filepath.Join(dir, e.Name())) == nil {
			n++
		}
	}
	return n
}
