package chat

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/chatlog"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
)

//go:embed keep.md
var keepDescription string

const keepSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "The absolute path of a file the user sent in this chat, as the message or chat_history shows it."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

// maxKeptNames is how many numbered names a kept file may try.
const maxKeptNames = 1000

// link makes a hard link; tests replace it to reach the cross-device path.
var link = os.Link

// Keep is the chat_keep tool of one session.
type Keep struct{ set *Set }

type keepArgs struct {
	Path string `json:"path"`
}

// Spec describes the tool.
func (*Keep) Spec() tools.Spec {
	return tools.Spec{Name: KeepName, Description: strings.TrimSpace(keepDescription), Schema: json.RawMessage(keepSchema)}
}

// Prepare accepts a regular file directly in this chat's media directory;
// a file already kept is reported without asking.
func (k *Keep) Prepare(_ tools.Env, raw json.RawMessage) (*tools.Plan, error) {
	var a keepArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("chat_keep arguments: %w", err)
	}
	s := k.set
	if !filepath.IsAbs(a.Path) {
		return nil, fmt.Errorf("path %q is not absolute; give the absolute path the message or chat_history shows for the file", a.Path)
	}
	p := filepath.Clean(a.Path)
	kept, err := chatlog.Kept(s.logDir)
	if err != nil {
		return nil, err
	}
	if to, ok := kept[p]; ok {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return &tools.Plan{Risk: protocol.RiskReadOnly, Summary: "Report a kept file", Run: func(context.Context) (tools.Result, error) {
				return tools.Result{Success: true, Output: fmt.Sprintf("%s is already kept, at %s.", p, to)}, nil
			}}, nil
		}
	}
	dir := filepath.Dir(p)
	if dir != s.media && resolvedDir(dir) != resolvedDir(s.media) {
		return nil, fmt.Errorf("%s is not a file of this chat's media directory (%s); chat_keep keeps only files the user sent in this chat, by the path shown with them", p, s.media)
	}
	if p == s.media || strings.HasPrefix(filepath.Base(p), ".") {
		return nil, fmt.Errorf("%s is not a file the user sent", p)
	}
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist: it may have been removed after its retention; chat_history shows such a file as gone", p)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %v", p, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%v); chat_keep keeps only regular files", p, fi.Mode().Type())
	}
	return &tools.Plan{
		Risk:    protocol.RiskFilesystem,
		Summary: fmt.Sprintf("Keep %s in this chat's kept files", p),
		Run: func(ctx context.Context) (tools.Result, error) {
			if err := ctx.Err(); err != nil {
				return tools.Result{}, err
			}
			to, err := k.keep(p, fi)
			if err != nil {
				return tools.Failed(fmt.Sprintf("%s was not kept: %v", p, err)), nil
			}
			return tools.Result{Success: true, Output: fmt.Sprintf("Kept %s as %s; it is no longer removed after the retention period.", filepath.Base(p), to)}, nil
		},
	}, nil
}

// keep links p into the kept files under a name no file has, then removes
// p and records the move. Across file systems p is first copied to a
// private temporary file beside the kept files, so a failed copy leaves
// nothing under the kept name.
func (k *Keep) keep(p string, checked fs.FileInfo) (string, error) {
	files := chatlog.FilesDir(k.set.logDir)
	if err := paths.EnsureDir(files); err != nil {
		return "", err
	}
	to, err := linkNew(p, files, filepath.Base(p))
	if errors.Is(err, syscall.EXDEV) {
		to, err = copyAcross(p, checked, files)
	}
	if err != nil {
		return "", err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("kept as %s, but removing the original failed: %w", to, err)
	}
	if err := atomicfile.SyncDir(files); err != nil {
		return "", err
	}
	if err := chatlog.RecordKept(k.set.logDir, p, to); err != nil {
		return "", fmt.Errorf("kept as %s, but %w", to, err)
	}
	return to, nil
}

// linkNew links src into dir under name, or name-2, name-3… when taken:
// a link never replaces a file.
func linkNew(src, dir, name string) (string, error) {
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for i := 1; i <= maxKeptNames; i++ {
		cand := name
		if i > 1 {
			cand = fmt.Sprintf("%s-%d%s", stem, i, ext)
		}
		dst := filepath.Join(dir, cand)
		err := link(src, dst)
		if err == nil {
			return dst, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("%d files named like %s are kept already", maxKeptNames, name)
}

// copyAcross copies src (checked to be the file Prepare saw) to a private
// temporary file in dir, then links that under a free kept name.
func copyAcross(src string, checked fs.FileInfo, dir string) (string, error) {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !os.SameFile(fi, checked) {
		return "", errors.New("the file was replaced after it was checked; call chat_keep again")
	}
	tmp, err := os.CreateTemp(dir, ".keep-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, in)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("copying across file systems: %w", err)
	}
	return linkNew(tmp.Name(), dir, filepath.Base(src))
}
