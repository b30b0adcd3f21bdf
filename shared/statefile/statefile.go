// Package statefile opens the files SCV keeps under SCV_HOME (session logs
// and summaries, delegation records, conversation markers, sign-in files,
// the prompt history, logs) and its configuration files, without trusting
// them to be what SCV wrote there.
//
// Every open is non-blocking (a FIFO put in a file's place would otherwise
// hang the open, and the server with it) and refuses anything but a
// regular file (a FIFO, a device, a socket, a directory) with a
// *NotRegularError that says what the file is and what to do. Symbolic
// links are followed by policy (Links): never among SCV's own state files,
// so that a log replaced by a link cannot make SCV append to a file
// outside SCV_HOME; inside a directory only, for a project's configuration;
// anywhere, for the user's own configuration file, which dotfiles managers
// link on purpose. ReadFile bounds what it reads; readers of records bound
// every line themselves.
package statefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Links says which symbolic links an open follows.
type Links int

const (
	// NoLinks is for SCV's own state files: the file's name is resolved
	// inside dir and nothing may lead out of it, and a symbolic link in the
	// file's place is refused, not followed.
	NoLinks Links = iota
	// LinksInside follows symbolic links while they stay inside dir, as
	// for a project's .scv/config.toml, which may link to another file of
	// the repository but never to one outside it.
	LinksInside
	// AnyLinks follows symbolic links anywhere, as for the user's
	// config.toml, which a dotfiles manager may link to its repository.
	AnyLinks
)

// NotRegularError is a path that is not a regular file, or a symbolic
// link where none is followed.
type NotRegularError struct {
	Path string
	Mode fs.FileMode // the file's type bits
}

func (e *NotRegularError) Error() string { return e.Path + " " + e.What() }

// What says what the file is and what to do, without its path: "is a
// named pipe (FIFO), not a regular file; remove it".
func (e *NotRegularError) What() string {
	switch {
	case e.Mode&fs.ModeSymlink != 0:
		return "is a symbolic link, which SCV does not follow here; replace it with the file itself"
	case e.Mode&fs.ModeNamedPipe != 0:
		return "is a named pipe (FIFO), not a regular file; remove it"
	case e.Mode.IsDir():
		return "is a directory, not a regular file; remove it or move it away"
	default:
		return fmt.Sprintf("is not a regular file (%v); remove it", e.Mode.Type())
	}
}

// OutsideError is a file whose path leads out of its directory through a
// symbolic link, where links may only stay inside.
type OutsideError struct {
	Path string
	Dir  string
	// Target is where the path leads, when it could be resolved.
	Target string
}

func (e *OutsideError) Error() string { return e.Path + " " + e.What() }

// What says what is wrong, without the path.
func (e *OutsideError) What() string {
	to := ""
	if e.Target != "" {
		to = " (to " + e.Target + ")"
	}
	return fmt.Sprintf("leads outside %s%s through a symbolic link, which SCV does not follow; keep the file inside %s", e.Dir, to, e.Dir)
}

// TooLargeError is a file larger than a reader's bound.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %d bytes, more than SCV ever writes there", e.Path, e.Limit)
}

// Open opens the file name (a relative path, possibly with several parts)
// inside dir with flag and, when it creates the file, perm. It never
// blocks on a FIFO, follows symbolic links as links says, and returns a
// *NotRegularError for anything but a regular file. A missing file is an
// error wrapping fs.ErrNotExist.
func Open(dir, name string, flag int, perm fs.FileMode, links Links) (*os.File, error) {
	if links == AnyLinks {
		path := filepath.Join(dir, name)
		f, err := os.OpenFile(path, flag|openFlags, perm)
		if err != nil {
			return nil, openErr(path, err)
		}
		return checkRegular(f, path)
	}
	d, err := OpenDir(dir, links)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Open(name, flag, perm)
}

// LogMaxBytes bounds a log file SCV appends to (the daemon's, the TUI's
// server log): one larger is moved to <name>.old, replacing the one
// before, when it is next opened, so two generations at most are kept.
const LogMaxBytes = 8 << 20

// OpenLog opens the log file at path for appending (created 0600; its
// directory must exist), first moving it to <path>.old when it holds more
// than LogMaxBytes. Like every state file it is never opened through a
// symbolic link nor as anything but a regular file; a link or other file
// in its place is not moved either.
func OpenLog(path string) (*os.File, error) {
	if st, err := os.Lstat(path); err == nil && st.Mode().IsRegular() && st.Size() > LogMaxBytes {
		// A second process that rotated first leaves a small file here,
		// which is kept; losing the race costs an old generation at most.
		_ = os.Rename(path, path+".old")
	}
	return Open(filepath.Dir(path), filepath.Base(path), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600, NoLinks)
}

// openFlags are added to every open.
const openFlags = syscall.O_NONBLOCK | syscall.O_CLOEXEC

// Dir is a directory whose files are opened with NoLinks or LinksInside,
// for a caller that opens many of them (a listing).
type Dir struct {
	path  string
	root  *os.Root
	links Links
}

// OpenDir opens dir for Dir.Open with links, NoLinks or LinksInside.
func OpenDir(dir string, links Links) (*Dir, error) {
	if links == AnyLinks {
		return nil, errors.New("statefile: OpenDir needs NoLinks or LinksInside")
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Dir{path: dir, root: root, links: links}, nil
}

// Close closes the directory.
func (d *Dir) Close() error { return d.root.Close() }

// Open opens the file name inside the directory, as the package's Open.
// No symbolic link leads out of the directory; with NoLinks a link in the
// file's place is refused too, and the file opened must be the one found
// at name.
func (d *Dir) Open(name string, flag int, perm fs.FileMode) (*os.File, error) {
	path := filepath.Join(d.path, name)
	noLinks := d.links == NoLinks
	if noLinks {
		before, err := d.root.Lstat(name)
		switch {
		case err == nil && before.Mode()&fs.ModeSymlink != 0:
			return nil, &NotRegularError{Path: path, Mode: fs.ModeSymlink}
		case err != nil && !(errors.Is(err, fs.ErrNotExist) && flag&os.O_CREATE != 0):
			if outside := d.outside(name); outside != nil {
				return nil, outside
			}
			return nil, err
		}
	}
	f, err := d.root.OpenFile(name, flag|openFlags, perm)
	if err != nil {
		if outside := d.outside(name); outside != nil {
			return nil, outside
		}
		return nil, openErr(path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if noLinks {
		// The name may have been swapped for a link between the look and
		// the open: the file opened must be what the name holds now.
		now, err := d.root.Lstat(name)
		if err != nil || now.Mode()&fs.ModeSymlink != 0 || !os.SameFile(fi, now) {
			f.Close()
			return nil, &NotRegularError{Path: path, Mode: fs.ModeSymlink}
		}
	}
	return regular(f, fi, path)
}

// ReadFile reads the file name inside the directory whole, refusing one
// larger than max bytes with a *TooLargeError.
func (d *Dir) ReadFile(name string, max int64) ([]byte, error) {
	f, err := d.Open(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	return readAll(f, filepath.Join(d.path, name), max)
}

// outside returns an *OutsideError when name leads out of the directory
// through a symbolic link (the os.Root refused it), nil otherwise.
func (d *Dir) outside(name string) error {
	dir, err := filepath.EvalSymlinks(d.path)
	if err != nil {
		return nil
	}
	path := filepath.Join(d.path, name)
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		// A dangling link: resolve what can be resolved.
		parent, perr := filepath.EvalSymlinks(filepath.Dir(path))
		if perr != nil {
			return nil
		}
		link, lerr := os.Readlink(filepath.Join(parent, filepath.Base(path)))
		if lerr != nil {
			if rel, rerr := filepath.Rel(dir, parent); rerr == nil && (rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))) {
				return &OutsideError{Path: path, Dir: d.path, Target: parent}
			}
			return nil
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(parent, link)
		}
		target = filepath.Clean(link)
	}
	if rel, err := filepath.Rel(dir, target); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil
	}
	return &OutsideError{Path: path, Dir: d.path, Target: target}
}

// openErr turns the error of an open into a *NotRegularError where the
// open failed because of what the file is.
func openErr(path string, err error) error {
	// A FIFO without a reader refuses a non-blocking open for writing.
	if errors.Is(err, syscall.ENXIO) {
		if fi, lerr := os.Lstat(path); lerr == nil {
			return &NotRegularError{Path: path, Mode: fi.Mode().Type()}
		}
	}
	return err
}

// checkRegular returns f when it is a regular file, and closes it
// otherwise.
func checkRegular(f *os.File, path string) (*os.File, error) {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return regular(f, fi, path)
}

// regular returns f when fi, its information, is a regular file's, and
// closes it otherwise.
func regular(f *os.File, fi fs.FileInfo, path string) (*os.File, error) {
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: path, Mode: fi.Mode().Type()}
	}
	return f, nil
}

// ReadFile reads the file name inside dir (see Open) whole, refusing one
// larger than max bytes with a *TooLargeError.
func ReadFile(dir, name string, max int64, links Links) ([]byte, error) {
	f, err := Open(dir, name, os.O_RDONLY, 0, links)
	if err != nil {
		return nil, err
	}
	return readAll(f, filepath.Join(dir, name), max)
}

// readAll reads f (and closes it), at most max bytes.
func readAll(f *os.File, path string, max int64) ([]byte, error) {
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &TooLargeError{Path: path, Limit: max}
	}
	return data, nil
}
