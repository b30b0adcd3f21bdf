package chat

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/chatlog"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
)

// Bounds of chat_attach.
const (
	// MaxAttachBytes is the largest file sent.
	MaxAttachBytes = 25 << 20
	// MaxFilesPerReply is how many files one reply carries.
	MaxFilesPerReply = 8
	// MaxCaptionBytes bounds a caption.
	MaxCaptionBytes = 1 << 10
)

//go:embed attach.md
var attachDescription string

const attachSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "The file to send: absolute, or relative to the workspace."},
    "caption": {"type": "string", "maxLength": 1024, "description": "Optional, at most 1 KiB; shown in the reply text as <name>: <caption>."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

// Attach is the chat_attach tool of one session.
type Attach struct {
	set *Set

	mu   sync.Mutex
	turn string // the turn whose files count is counting
	sent int
}

type attachArgs struct {
	Path    string `json:"path"`
	Caption string `json:"caption"`
}

// Spec describes the tool.
func (*Attach) Spec() tools.Spec {
	return tools.Spec{Name: AttachName, Description: strings.TrimSpace(attachDescription), Schema: json.RawMessage(attachSchema)}
}

// Prepare checks the path before approval: every refusal of the
// specification, on the path as given and with its symbolic links
// resolved, then the file's type and size, then the reply's file count.
func (a *Attach) Prepare(env tools.Env, raw json.RawMessage) (*tools.Plan, error) {
	var in attachArgs
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("chat_attach arguments: %w", err)
	}
	if len(in.Caption) > MaxCaptionBytes {
		return nil, fmt.Errorf("the caption is %d bytes, over the %d-byte limit; shorten it", len(in.Caption), MaxCaptionBytes)
	}
	if !utf8.ValidString(in.Path) || strings.ContainsRune(in.Path, 0) {
		return nil, fmt.Errorf("path %q is not a valid path", in.Path)
	}
	given := in.Path
	if !filepath.IsAbs(given) {
		given = filepath.Join(env.Workspace, given)
	}
	given = filepath.Clean(given)
	if why := a.set.refusal(given); why != "" {
		return nil, refused(in.Path, why)
	}
	real, err := filepath.EvalSymlinks(given)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s does not exist; give the path of an existing file", in.Path)
		}
		return nil, fmt.Errorf("cannot resolve %s: %v", in.Path, err)
	}
	if why := a.set.refusal(real); why != "" {
		return nil, refused(in.Path, why)
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %v", in.Path, err)
	}
	if err := checkFile(in.Path, fi); err != nil {
		return nil, err
	}
	if n := a.count(env.TurnID); n >= MaxFilesPerReply {
		return nil, fmt.Errorf("%s was not sent: a reply carries at most %d files and this one already has %d; tell the user which files were left out, or send them in a later reply", in.Path, MaxFilesPerReply, n)
	}
	name := filepath.Base(given)
	return &tools.Plan{
		Risk:    protocol.RiskNetwork,
		Summary: fmt.Sprintf("Send %s (%s) to the chat", real, sizeText(fi.Size())),
		Run: func(ctx context.Context) (tools.Result, error) {
			if err := ctx.Err(); err != nil {
				return tools.Result{}, err
			}
			return a.run(env.TurnID, in.Path, real, name, in.Caption, fi), nil
		},
	}, nil
}

func refused(p, why string) error {
	return fmt.Errorf("chat_attach refuses %s: %s. Files leave this machine through the chat, so keys, credentials and SCV's own files are never sent; send a different file", p, why)
}

// checkFile refuses anything but a regular, non-empty file of at most
// MaxAttachBytes.
func checkFile(p string, fi fs.FileInfo) error {
	switch {
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%v); chat_attach sends regular files only", p, fi.Mode().Type())
	case fi.Size() == 0:
		return fmt.Errorf("%s is empty; there is nothing to send", p)
	case fi.Size() > MaxAttachBytes:
		return fmt.Errorf("%s is %s, over the 25 MiB a chat file may be; send a smaller file (compress or split it)", p, sizeText(fi.Size()))
	}
	return nil
}

// count returns the files the turn's reply already carries.
func (a *Attach) count(turn string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if turn != a.turn {
		return 0
	}
	return a.sent
}

// reserve takes one of the turn's file slots; false when none is left.
func (a *Attach) reserve(turn string) (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if turn != a.turn {
		a.turn, a.sent = turn, 0
	}
	if a.sent >= MaxFilesPerReply {
		return a.sent, false
	}
	a.sent++
	return a.sent, true
}

func (a *Attach) release(turn string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if turn == a.turn && a.sent > 0 {
		a.sent--
	}
}

// OutboxRecord is the durable delivery record of a copy in the outbox.
type OutboxRecord = chatlog.OutboxRecord

// run opens the checked file without following a final symbolic link,
// checks it again through the handle, and copies it into the outbox.
func (a *Attach) run(turn, given, real, name, caption string, checked fs.FileInfo) tools.Result {
	f, err := os.OpenFile(real, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return tools.Failed(fmt.Sprintf("%s was not sent: opening it failed (%v); it may have been replaced by a link or removed since it was checked", given, err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return tools.Failed(fmt.Sprintf("%s was not sent: %v", given, err))
	}
	// Same inode, size and time: an inode freed and reused at once by
	// another file still differs in one of them.
	if !os.SameFile(fi, checked) || fi.Size() != checked.Size() || !fi.ModTime().Equal(checked.ModTime()) {
		return tools.Failed(fmt.Sprintf("%s was not sent: it was replaced after it was checked; call chat_attach again", given))
	}
	if err := checkFile(given, fi); err != nil {
		return tools.Failed(err.Error() + "; it was not sent")
	}
	if handle := handlePath(f); handle != "" {
		if why := a.set.refusal(handle); why != "" {
			return tools.Failed(refused(given, why).Error())
		}
	}
	n, ok := a.reserve(turn)
	if !ok {
		return tools.Failed(fmt.Sprintf("%s was not sent: a reply carries at most %d files; tell the user which files were left out", given, MaxFilesPerReply))
	}
	rec, err := a.copyOut(turn, f, fi.Size(), real, name, caption)
	if err != nil {
		a.release(turn)
		return tools.Failed(fmt.Sprintf("%s was not sent: %v", given, err))
	}
	out, _ := json.Marshal(struct {
		Attached OutboxRecord `json:"attached"`
		Files    int          `json:"files_in_reply"`
		Max      int          `json:"max_files_per_reply"`
	}{rec, n, MaxFilesPerReply})
	return tools.Result{Success: true, Output: fmt.Sprintf("%s (%s, %s) is sent to the chat after the reply text; file %d of at most %d in this reply.\n%s",
		name, rec.Kind, sizeText(rec.Size), n, MaxFilesPerReply, out)}
}

// copyOut copies f into <outbox>/<id>/<name> (0600) and then writes the
// delivery record <outbox>/<id>.json atomically; a crash leaves either no
// record or a complete copy with its record.
func (a *Attach) copyOut(turn string, f *os.File, size int64, real, name, caption string) (OutboxRecord, error) {
	s := a.set
	id := newID(s.opts.Now())
	outbox := OutboxDir(s.opts.Home)
	dir := filepath.Join(outbox, id)
	if err := paths.EnsureDir(dir); err != nil {
		return OutboxRecord{}, err
	}
	dst := filepath.Join(dir, name)
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		_ = os.RemoveAll(dir)
		return OutboxRecord{}, fmt.Errorf("copying into the outbox: %w", err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(f, size+1))
	if err == nil && n != size {
		err = errors.New("the file changed while it was copied; call chat_attach again")
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return OutboxRecord{}, fmt.Errorf("copying into the outbox: %w", err)
	}
	ch := s.opts.Channel
	rec := OutboxRecord{ID: id, Platform: ch.Platform, Account: ch.Account, Conversation: ch.Conversation,
		SessionID: s.opts.SessionID, TurnID: turn, Name: name, Path: dst, Source: real, Size: size,
		SHA256: hex.EncodeToString(h.Sum(nil)), Kind: kindOf(name), Caption: caption, Created: s.opts.Now().UTC()}
	data, _ := json.MarshalIndent(rec, "", "  ")
	if err := atomicfile.WriteFile(filepath.Join(outbox, id+".json"), append(data, '\n'), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return OutboxRecord{}, fmt.Errorf("recording the delivery: %w", err)
	}
	return rec, nil
}

// handlePath is the path the kernel has for an open file (Linux), or ""
// where it cannot tell.
func handlePath(f *os.File) string {
	p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil || !filepath.IsAbs(p) {
		return ""
	}
	return p
}

// newID names an outbox entry: sortable by time, unique by its random
// part.
func newID(t time.Time) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return t.UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// kindOf says how the chat shows a file: image, video or file.
func kindOf(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp":
		return "image"
	case ".mp4", ".mov", ".m4v", ".webm", ".mkv", ".avi":
		return "video"
	}
	return "file"
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
