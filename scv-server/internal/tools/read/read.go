// Package read is the read tool: a byte range of a workspace file, or a
// directory listing, through the workspace's os.Root.
package read

import (
	"context"
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
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/scv-server/internal/tools/workspace"
	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/shared/textcut"
)

//go:embed description.md
var description string

const schema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File or directory path relative to the workspace."},
    "offset": {"type": "integer", "minimum": 0, "description": "First byte to read (default 0)."},
    "limit": {"type": "integer", "minimum": 1, "description": "Most bytes to read (default: the output limit)."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

// maxListing bounds a directory listing.
const maxListing = 1000

// Tool is the read tool.
type Tool struct{}

// New returns the read tool.
func New() *Tool { return &Tool{} }

type args struct {
	Path   string `json:"path"`
	Offset *int64 `json:"offset"`
	Limit  *int64 `json:"limit"`
}

// Spec describes the tool.
func (*Tool) Spec() tools.Spec {
	return tools.Spec{Name: "read", Description: strings.TrimSpace(description), Schema: json.RawMessage(schema)}
}

// Prepare checks the path. Secret-like names are filesystem risk, so they
// ask for approval under on-risk; every other read is read-only.
func (*Tool) Prepare(env tools.Env, raw json.RawMessage) (*tools.Plan, error) {
	var a args
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("read arguments: %w", err)
	}
	if dir, name, ok := spillFile(env, a.Path); ok {
		// A spill file of this session's bash calls: readable like a
		// workspace file, through a root on the spill directory.
		return &tools.Plan{
			Risk:    protocol.RiskReadOnly,
			Summary: "Read " + a.Path,
			Run: func(ctx context.Context) (tools.Result, error) {
				return runSpill(ctx, env, dir, name, a)
			},
		}, nil
	}
	rel, err := workspace.Rel(env.Workspace, a.Path)
	if err != nil {
		return nil, err
	}
	risk := protocol.RiskReadOnly
	if workspace.SecretLike(rel) {
		risk = protocol.RiskFilesystem
	}
	summary := "Read " + rel
	if risk != protocol.RiskReadOnly {
		summary += " (the name looks like a secret)"
	}
	return &tools.Plan{
		Risk:    risk,
		Summary: summary,
		Run: func(ctx context.Context) (tools.Result, error) {
			return run(ctx, env, rel, a)
		},
	}, nil
}

// spillFile reports whether p is the absolute path of a file directly in
// the session's spill directory, and returns that directory and the
// file's name.
func spillFile(env tools.Env, p string) (dir, name string, ok bool) {
	if env.StateDir == "" || !filepath.IsAbs(p) {
		return "", "", false
	}
	dir = filepath.Join(env.StateDir, tools.SpillDir)
	if filepath.Dir(filepath.Clean(p)) != dir {
		return "", "", false
	}
	name = filepath.Base(p)
	return dir, name, name != "." && name != ".."
}

// runSpill reads a spill file through a root opened on the spill
// directory, so a link there cannot lead anywhere else.
func runSpill(ctx context.Context, env tools.Env, dir, name string, a args) (tools.Result, error) {
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return tools.Failed(fmt.Sprintf("%s does not exist or cannot be opened: %v", filepath.Join(dir, name), errors.Unwrap(err))), nil
	}
	defer root.Close()
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return tools.Failed(describeOpenError(filepath.Join(dir, name), err)), nil
	}
	defer f.Close()
	return readOpen(env, f, filepath.Join(dir, name), a)
}

func run(ctx context.Context, env tools.Env, rel string, a args) (tools.Result, error) {
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	// O_NONBLOCK keeps a FIFO from blocking the open; it is refused below.
	f, err := workspace.OpenFile(env.Root, env.Workspace, rel, os.O_RDONLY|syscall.O_NONBLOCK)
	if err != nil {
		return tools.Failed(describeOpenError(rel, err)), nil
	}
	defer f.Close()
	return readOpen(env, f, rel, a)
}

// readOpen reads the range a asks for of the open file f, named rel in
// the result.
func readOpen(env tools.Env, f *os.File, rel string, a args) (tools.Result, error) {
	fi, err := f.Stat()
	if err != nil {
		return tools.Failed(fmt.Sprintf("cannot stat %s: %v", rel, err)), nil
	}
	if fi.IsDir() {
		return list(f, rel)
	}
	if !fi.Mode().IsRegular() {
		return tools.Failed(fmt.Sprintf("%s is not a regular file (%s); read reads files and directories only", rel, fi.Mode().Type())), nil
	}
	total := fi.Size()
	var offset int64
	if a.Offset != nil {
		offset = *a.Offset
	}
	if offset > total {
		return tools.Failed(fmt.Sprintf("offset %d is past the end of %s, which has %d bytes", offset, rel, total)), nil
	}
	limit := int64(env.OutputLimit)
	if limit <= 0 {
		limit = 64 << 10
	}
	// explicit is true when the caller's limit, not the output limit, ends
	// the range; a capped limit is treated like the default.
	explicit := a.Limit != nil && *a.Limit <= limit
	if explicit {
		limit = *a.Limit
	}
	// capped says so when the caller asked for more than one call returns.
	var capped string
	if a.Limit != nil && !explicit {
		capped = fmt.Sprintf("; limit %d is above the output limit of %d bytes (tools.output_limit_bytes), so at most %d were read", *a.Limit, limit, limit)
	}
	want := min(limit, total-offset)
	buf := make([]byte, want)
	n, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return tools.Failed(fmt.Sprintf("reading %s: %v", rel, err)), nil
	}
	buf = buf[:n]
	end := offset + int64(n)
	if !explicit && end < total {
		// The default limit may cut a character; end the range before it.
		buf = textcut.TrimPartialEnd(buf)
		end = offset + int64(len(buf))
	}
	if pos, bad := invalidAt(buf); bad {
		return tools.Failed(fmt.Sprintf("bytes %d-%d of %s are not valid UTF-8 (first bad byte at position %d); the file may be binary, or the range may cut a multi-byte character: choose another offset or limit",
			offset, end, rel, offset+int64(pos))), nil
	}
	truncated := end < total
	header := fmt.Sprintf("[%s: %d bytes%s; bytes %d-%d%s]", rel, total, digest(f, total), offset, end, capped)
	if truncated {
		header = fmt.Sprintf("[%s: %d bytes%s; bytes %d-%d shown, truncated%s; read with offset %d for the rest]", rel, total, digest(f, total), offset, end, capped, end)
	}
	return tools.Result{Success: true, Output: header + "\n" + string(buf), Truncated: truncated}, nil
}

// maxDigestBytes bounds the files whose sha256 read reports: hashing a
// huge file to show a slice of it would cost more than the read.
const maxDigestBytes = 16 << 20

// digest returns ", sha256 <hex>" of the whole file, which write and edit
// take as expected_sha256, or "" for a file too large to hash cheaply.
func digest(f *os.File, size int64) string {
	if size > maxDigestBytes {
		return ""
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, size)); err != nil {
		return ""
	}
	return ", sha256 " + hex.EncodeToString(h.Sum(nil))
}

func invalidAt(b []byte) (int, bool) {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i, true
		}
		i += size
	}
	return 0, false
}

func list(f *os.File, rel string) (tools.Result, error) {
	entries, err := f.ReadDir(maxListing + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return tools.Failed(fmt.Sprintf("listing %s: %v", rel, err)), nil
	}
	more := len(entries) > maxListing
	if more {
		entries = entries[:maxListing]
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir():
			name += "/"
		case e.Type()&fs.ModeSymlink != 0:
			name += "@"
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	noun := "entries"
	if len(names) == 1 {
		noun = "entry"
	}
	fmt.Fprintf(&b, "[%s: directory, %d %s", rel, len(names), noun)
	if more {
		fmt.Fprintf(&b, " shown (more not listed)")
	}
	b.WriteString("]\n")
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte('\n')
	}
	return tools.Result{Success: true, Output: b.String(), Truncated: more}, nil
}

func describeOpenError(rel string, err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s does not exist in the workspace", rel)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("permission denied reading %s", rel)
	case workspace.Escapes(err):
		return fmt.Sprintf("%s leads outside the workspace (through a symlink or ..) and cannot be read", rel)
	}
	return fmt.Sprintf("cannot open %s: %v", rel, err)
}
