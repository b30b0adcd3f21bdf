package workspace

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// TempPrefix starts the name a write's new content has for the moment
// between being linked into the destination directory and being renamed
// over the target (see WriteAtomic). Where the filesystem has no unnamed
// temporary files (O_TMPFILE) it is the name of the temporary file for the
// whole write.
const TempPrefix = ".scv-tmp-"

// MaxTextBytes bounds the file a write or edit reads whole: the content an
// edit changes, and the old content a replacing write diffs against.
const MaxTextBytes = 16 << 20

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// CheckSHA256 checks that s looks like a sha256 in lowercase hex.
func CheckSHA256(s string) error {
	if sha256Hex.MatchString(s) {
		return nil
	}
	return fmt.Errorf("expected_sha256 %q is not a sha256: give the 64 lowercase hexadecimal digits reported for the file", clipLine(s, 80))
}

// SHA256 returns the sha256 of b in lowercase hex.
func SHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Resolve returns the workspace-relative path that rel names once the
// symlinks on its way are followed, the final component's too: the longest
// prefix of rel that exists is resolved and the rest is appended. It fails
// with an error the model can read when that leads outside the workspace.
//
// The result is a name to use through the workspace's os.Root, which
// enforces containment by itself whatever happens to the tree after
// Resolve returns; resolving first only lets links with absolute targets
// inside the workspace work (os.Root refuses every absolute link) and a
// write replace the file a link points to rather than the link.
func Resolve(ws, rel string) (string, error) {
	rest := ""
	p := rel
	for {
		real, err := filepath.EvalSymlinks(filepath.Join(ws, filepath.FromSlash(p)))
		if err == nil {
			in, rerr := Rel(ws, real)
			if rerr != nil {
				return "", fmt.Errorf("%s leads outside the workspace (through a symlink) and cannot be written", rel)
			}
			return path.Join(in, rest), nil
		}
		switch {
		case errors.Is(err, syscall.ENOTDIR):
			return "", fmt.Errorf("a parent of %s is a file, not a directory", rel)
		case errors.Is(err, syscall.ELOOP):
			return "", fmt.Errorf("%s has too many levels of symlinks", rel)
		case !errors.Is(err, fs.ErrNotExist) || p == ".":
			return "", fmt.Errorf("cannot resolve %s: %v", rel, err)
		case danglingOutside(ws, p):
			return "", fmt.Errorf("%s leads outside the workspace (through a symlink) and cannot be written", rel)
		}
		rest = path.Join(path.Base(p), rest)
		p = path.Dir(p)
	}
}

// danglingOutside reports whether p is a symlink whose target, which does
// not exist, is outside the workspace. It only improves the message: such
// a path is refused anyway, as a dangling link or by os.Root.
func danglingOutside(ws, p string) bool {
	full := filepath.Join(ws, filepath.FromSlash(p))
	target, err := os.Readlink(full)
	if err != nil {
		return false
	}
	if !filepath.IsAbs(target) {
		dir, err := filepath.EvalSymlinks(filepath.Dir(full))
		if err != nil {
			return false
		}
		target = filepath.Join(dir, target)
	}
	_, err = Rel(ws, target)
	return err != nil
}

// Target is a file as a write found it.
type Target struct {
	// Rel is the path the call named; Real the resolved path (Resolve).
	Rel, Real string
	Exists    bool
	// Info describes the existing file.
	Info fs.FileInfo
	// Content is the existing file's content, unless it is larger than
	// MaxTextBytes (Large).
	Content []byte
	Large   bool
	// SHA256 is the existing file's sha256; empty when Large: a file over
	// MaxTextBytes is never read or hashed.
	SHA256 string
}

// Observe resolves rel and reads what is there through root. A path that
// does not exist is a Target with Exists false. Directories, non-regular
// files, dangling symlinks and paths leading outside the workspace are
// errors written for the model.
func Observe(root *os.Root, ws, rel string) (*Target, error) {
	if root == nil {
		return nil, errors.New("this session has no workspace to write to")
	}
	if rel == "." {
		return nil, errors.New("the path names the workspace directory itself: give a file path")
	}
	real, err := Resolve(ws, rel)
	if err != nil {
		return nil, err
	}
	t := &Target{Rel: rel, Real: real}
	fi, err := root.Lstat(real)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return t, nil
	case err != nil:
		return nil, describe(rel, "inspect", err)
	}
	switch {
	case fi.IsDir():
		return nil, fmt.Errorf("%s is a directory: give the path of a file", rel)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("%s is a symlink that does not lead to an existing file in the workspace; write the file it should point to instead", rel)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file (%s); only regular files can be written", rel, fi.Mode().Type())
	}
	t.Exists, t.Info = true, fi
	content, sum, large, err := readTarget(root, real, fi.Size())
	if err != nil {
		return nil, describe(rel, "read", err)
	}
	t.Content, t.SHA256, t.Large = content, sum, large
	return t, nil
}

// readTarget reads a regular file whole, or, when it is larger than
// MaxTextBytes, reads nothing: size is checked before any byte is read or
// hashed, so a huge file costs one stat (issue 14, item 4). O_NONBLOCK
// keeps a FIFO swapped in from blocking the open; it is refused after.
func readTarget(root *os.Root, name string, size int64) (content []byte, sum string, large bool, err error) {
	if size > MaxTextBytes {
		return nil, "", true, nil
	}
	f, err := openTarget(root, name)
	if err != nil {
		return nil, "", false, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, "", false, err
	} else if !fi.Mode().IsRegular() {
		return nil, "", false, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	} else if fi.Size() > MaxTextBytes {
		return nil, "", true, nil
	}
	var b bytes.Buffer
	b.Grow(int(size) + bytes.MinRead)
	if _, err := b.ReadFrom(io.LimitReader(f, MaxTextBytes+1)); err != nil {
		return nil, "", false, err
	}
	if b.Len() > MaxTextBytes {
		return nil, "", false, fmt.Errorf("it grew past %d bytes while being read", MaxTextBytes)
	}
	content = b.Bytes()
	return content, SHA256(content), false, nil
}

// openTarget opens a file whose content readTarget reads; a variable so a
// test can see that a large file is never opened.
var openTarget = func(root *os.Root, name string) (*os.File, error) {
	return root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// hashChunk is how much HashFile reads between two looks at its context.
const hashChunk = 1 << 20

// HashFile returns the sha256 of r's first limit bytes, checking ctx
// before every chunk, so a cancelled call stops within one chunk. More
// than limit bytes is an error: nothing unbounded is hashed.
func HashFile(ctx context.Context, r io.Reader, limit int64) (string, error) {
	h := sha256.New()
	buf := make([]byte, hashChunk)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		k, err := io.ReadFull(r, buf)
		n += int64(k)
		if n > limit {
			return "", fmt.Errorf("it has more than %d bytes, too many to hash", limit)
		}
		h.Write(buf[:k])
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return hex.EncodeToString(h.Sum(nil)), nil
		}
		if err != nil {
			return "", err
		}
	}
}

// CurrentSHA256 hashes the file name through root (at most MaxTextBytes;
// a larger file is an error), stopping when ctx ends.
func CurrentSHA256(ctx context.Context, root *os.Root, name string) (string, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return HashFile(ctx, f, MaxTextBytes)
}

// StaleError is the refusal of a write whose expected_sha256 no longer
// matches the file.
func StaleError(rel, expected, current string) error {
	return fmt.Errorf("%s has changed: expected_sha256 is %s but its current sha256 is %s; read the file again and redo the change against its current content", rel, expected, current)
}

// WriteOptions shape one atomic write.
type WriteOptions struct {
	// Perm is the permission of a new file; the umask applies unless
	// Exact is set, which also keeps the setuid, setgid and sticky bits.
	Perm  fs.FileMode
	Exact bool
	// UID and GID, when not -1, are the owner to give the file; failing
	// to is not an error (only a privileged server can).
	UID, GID int
	// NoReplace installs the file only if nothing is at name then: the
	// write fails with fs.ErrExist otherwise.
	NoReplace bool
	// BeforeInstall runs once the temporary file is durable, right before
	// it is installed; an error stops the write.
	BeforeInstall func() error
}

// WriteAtomic writes data to name through root so that name holds either
// its old content or all of data, whatever happens. data goes to an
// unnamed temporary file (O_TMPFILE) in name's directory, which is flushed
// (fsync); then ctx is checked a last time and the file is given its name:
// linked at name (NoReplace: fails with fs.ErrExist if something is
// there), or linked under a TempPrefix name and renamed over name. Then
// the directory is flushed. A process killed midway leaves nothing a user
// sees, except when killed between that link and the rename, two system
// calls apart. On a filesystem without O_TMPFILE the temporary file has a
// TempPrefix name from the start, and a killed write can leave it behind
// (never at name).
//
// A write whose ctx ends before the file is installed returns ctx's error
// and leaves name as it was; once installed, the write is done and ctx is
// no longer looked at: the caller reports what is on disk.
func WriteAtomic(ctx context.Context, root *os.Root, name string, data []byte, o WriteOptions) error {
	dir := path.Dir(name)
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	f, named, err := createTemp(root, d, dir, o.Perm)
	if err != nil {
		return err
	}
	installed := false
	tmp := named
	defer func() {
		if f != nil {
			f.Close()
		}
		if !installed && tmp != "" {
			_ = root.Remove(path.Join(dir, tmp))
		}
	}()
	if o.Exact {
		// Through the descriptor: no path, so no race with a link swap.
		if err := f.Chmod(o.Perm & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)); err != nil {
			return err
		}
	}
	if o.UID >= 0 && o.GID >= 0 && (o.UID != os.Geteuid() || o.GID != os.Getegid()) {
		_ = f.Chown(o.UID, o.GID)
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if o.BeforeInstall != nil {
		if err := o.BeforeInstall(); err != nil {
			return err
		}
	}
	// The last moment a cancellation can still leave the target alone.
	if err := ctx.Err(); err != nil {
		return err
	}
	base := path.Base(name)
	dfd := int(d.Fd())
	if named == "" {
		// Give the unnamed file a name: at the target itself when nothing
		// may be replaced (linkat never replaces), else a temporary one.
		link := base
		if !o.NoReplace {
			link = tempName()
		}
		if err := linkTemp(f, dfd, link); err != nil {
			if o.NoReplace && errors.Is(err, unix.EEXIST) {
				return &fs.PathError{Op: "create", Path: name, Err: fs.ErrExist}
			}
			return &fs.PathError{Op: "link", Path: name, Err: err}
		}
		if o.NoReplace {
			installed = true
		} else {
			tmp = link
		}
	}
	err = f.Close()
	f = nil
	if err != nil && !installed {
		return err
	}
	if !installed {
		if err := install(root, dir, tmp, name, o.NoReplace); err != nil {
			return err
		}
		installed = true
	}
	if err := d.Sync(); err != nil {
		return &InstalledError{err}
	}
	return nil
}

// createTemp opens the temporary file of a write in directory d (dir
// through root): an unnamed O_TMPFILE file when the filesystem has them
// (named ""), else a new file with a TempPrefix name.
func createTemp(root *os.Root, d *os.File, dir string, perm fs.FileMode) (f *os.File, named string, err error) {
	fd, err := unix.Openat(int(d.Fd()), ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err == nil {
		return os.NewFile(uintptr(fd), path.Join(dir, "(unnamed)")), "", nil
	}
	// EOPNOTSUPP: the filesystem has none; EISDIR or EINVAL: the kernel
	// predates O_TMPFILE. Anything else (permission, space) is the error.
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EINVAL) {
		return nil, "", &fs.PathError{Op: "create", Path: path.Join(dir, "(temporary file)"), Err: err}
	}
	named = tempName()
	f, err = root.OpenFile(path.Join(dir, named), os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm.Perm())
	if err != nil {
		return nil, "", err
	}
	return f, named, nil
}

func tempName() string {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	return TempPrefix + hex.EncodeToString(rnd[:])
}

// linkTemp gives the unnamed file f the name link in the directory dfd.
// linkat through /proc/self/fd needs no privilege, unlike AT_EMPTY_PATH.
func linkTemp(f *os.File, dfd int, link string) error {
	return unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), dfd, link, unix.AT_SYMLINK_FOLLOW)
}

// install puts the temporary file tmp (in dir) at name: a rename, or for
// noReplace a hard link that fails if name exists.
func install(root *os.Root, dir, tmp, name string, noReplace bool) error {
	from := path.Join(dir, tmp)
	if !noReplace {
		return root.Rename(from, name)
	}
	err := root.Link(from, name)
	switch {
	case err == nil:
		_ = root.Remove(from)
		return nil
	case errors.Is(err, fs.ErrExist):
		return err
	}
	// No hard links here (some filesystems): check, then rename.
	if _, lerr := root.Lstat(name); lerr == nil {
		return &fs.PathError{Op: "create", Path: name, Err: fs.ErrExist}
	}
	return root.Rename(from, name)
}

// InstalledError reports a write whose file is in place but whose
// directory could not be flushed, so the rename may not survive a crash.
type InstalledError struct{ Err error }

func (e *InstalledError) Error() string {
	return "the file was written, but flushing its directory failed: " + e.Err.Error()
}

func (e *InstalledError) Unwrap() error { return e.Err }

// Owner returns the owner of fi, or -1, -1.
func Owner(fi fs.FileInfo) (uid, gid int) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return -1, -1
}

var writeLocks [64]sync.Mutex

// Lock serializes the writes of this process to one resolved path of one
// workspace (striped: unrelated paths may share a lock) and returns the
// unlock function. It does not lock out other processes.
func Lock(ws, real string) (unlock func()) {
	h := fnv.New64a()
	_, _ = io.WriteString(h, ws)
	_, _ = h.Write([]byte{0})
	_, _ = io.WriteString(h, real)
	m := &writeLocks[h.Sum64()%uint64(len(writeLocks))]
	m.Lock()
	return m.Unlock
}

// DescribeWriteError turns an error of a write to rel into a message for
// the model.
func DescribeWriteError(rel string, err error) string {
	return describe(rel, "write", err).Error()
}

func describe(rel, verb string, err error) error {
	var inst *InstalledError
	switch {
	case errors.As(err, &inst):
		return fmt.Errorf("%s: %v", rel, inst)
	case escapes(err):
		return fmt.Errorf("%s leads outside the workspace (through a symlink or ..) and cannot be written", rel)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("permission denied: cannot %s %s", verb, rel)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("a parent of %s is a file, not a directory", rel)
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("no space left on the device to %s %s", verb, rel)
	case errors.Is(err, syscall.EROFS):
		return fmt.Errorf("cannot %s %s: the filesystem is read-only", verb, rel)
	}
	msg := err.Error()
	// os.Root errors name the call ("openat x: ..."); keep the reason.
	var pe *fs.PathError
	if errors.As(err, &pe) {
		msg = pe.Err.Error()
	}
	return fmt.Errorf("cannot %s %s: %s", verb, rel, strings.TrimSpace(msg))
}

// ChangedError is the refusal of a replace whose target no longer has the
// content it was read with.
type ChangedError struct {
	// Current is the file's sha256 now, or "" for a file too large to
	// hash, whose change was seen in its size, times or inode.
	Current string
}

func (e *ChangedError) Error() string {
	if e.Current == "" {
		return "the file changed while it was being written (its size, modification time or inode is not what it was)"
	}
	return "the file changed while it was being written (its sha256 is now " + e.Current + ")"
}

// ReplaceFile atomically replaces the existing file t (from Observe) with
// data. The new file keeps t's permission bits and, when the server may
// set it, its owner; a hard link to the old file keeps the old content.
// Right before the replace it checks that the file is still what t saw and
// fails with a *ChangedError if not: by its sha256, or, for a file over
// MaxTextBytes that was never hashed, by its size, modification and
// change times and inode. ctx ending stops the write before the replace.
func ReplaceFile(ctx context.Context, root *os.Root, t *Target, data []byte) error {
	uid, gid := Owner(t.Info)
	return WriteAtomic(ctx, root, t.Real, data, WriteOptions{
		Perm: t.Info.Mode(), Exact: true, UID: uid, GID: gid,
		BeforeInstall: func() error {
			if t.Large {
				fi, err := root.Lstat(t.Real)
				if err != nil {
					return err
				}
				if !SameFile(fi, t.Info) {
					return &ChangedError{}
				}
				return nil
			}
			cur, err := CurrentSHA256(ctx, root, t.Real)
			if err != nil {
				return err
			}
			if cur != t.SHA256 {
				return &ChangedError{Current: cur}
			}
			return nil
		},
	})
}

// SameFile reports whether a and b describe the same file with the same
// size, modification and change times: what stands for "unchanged" for a
// file too large to hash.
func SameFile(a, b fs.FileInfo) bool {
	if a.Size() != b.Size() || !a.ModTime().Equal(b.ModTime()) || !os.SameFile(a, b) {
		return false
	}
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return !ok1 || !ok2 || sa.Ctim == sb.Ctim
}

// CreateFile atomically creates the file t.Real (t from Observe, not
// existing) with data, making its parent directories inside root first.
// It fails with fs.ErrExist if something appeared at the path meanwhile.
func CreateFile(ctx context.Context, root *os.Root, t *Target, data []byte) error {
	if dir := path.Dir(t.Real); dir != "." {
		if err := root.MkdirAll(dir, 0o777); err != nil {
			return err
		}
	}
	return WriteAtomic(ctx, root, t.Real, data, WriteOptions{Perm: 0o666, UID: -1, GID: -1, NoReplace: true})
}
