// Package atomicfile replaces files atomically: a reader sees either the old
// content or the new content of a file, never a mix, and after a crash the
// file holds one or the other.
//
// A write goes to a temporary file created with O_EXCL in the target's
// directory (named TempPrefix followed by random characters), which is
// written, fsynced and closed, then renamed over the target; the directory is
// then fsynced so that the rename itself is durable. On any error the
// temporary file is removed and the target is left untouched.
//
// Use it for SCV's own files under SCV_HOME (configuration, state). It works
// on paths, so it is not for files inside a workspace, which go through an
// os.Root (see docs on containment).
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
)

// DefaultPerm is the mode of files written with perm 0: SCV's state files
// are private to the user.
const DefaultPerm fs.FileMode = 0o600

// TempPrefix starts the name of every temporary file this package creates,
// so that leftovers of a crash can be recognised and swept.
const TempPrefix = ".scv-tmp-"

// WriteFile atomically replaces the file at path with data. The file gets
// exactly the mode perm (the umask does not apply); perm 0 means DefaultPerm.
// The directory of path must exist. If path is a symbolic link, the link
// itself is replaced by a regular file.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return writeFile(path, perm, true, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// WriteFileNoSync is WriteFile without the fsyncs: readers still see the
// old or the new content, never a mix, but after a machine crash the file
// may hold either, or be missing. It is for records that only matter
// while the machine runs, such as a record of running processes, which a
// crash ends anyway; it saves two fsyncs per write.
func WriteFileNoSync(path string, data []byte, perm fs.FileMode) error {
	return writeFile(path, perm, false, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// WriteFileFunc atomically replaces the file at path with whatever write
// writes to the io.Writer it is given (buffered; do not retain it after write
// returns). If write returns an error or panics, the temporary file is
// removed, the target is left untouched, and the error is returned wrapped
// (the panic continues). perm is as for WriteFile.
func WriteFileFunc(path string, perm fs.FileMode, write func(w io.Writer) error) error {
	if write == nil {
		return fmt.Errorf("atomicfile: write %s: nil write function", path)
	}
	return writeFile(path, perm, true, func(f *os.File) error {
		bw := bufio.NewWriterSize(f, 64<<10)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
}

func writeFile(path string, perm fs.FileMode, durable bool, fill func(*os.File) error) error {
	if path == "" {
		return errors.New("atomicfile: empty path")
	}
	if perm == 0 {
		perm = DefaultPerm
	}
	perm = perm.Perm()
	dir := filepath.Dir(path)

	if fi, statErr := os.Stat(path); statErr == nil && fi.IsDir() {
		return fmt.Errorf("atomicfile: write %s: it is a directory", path)
	}

	// os.CreateTemp opens with O_RDWR|O_CREATE|O_EXCL and a random suffix,
	// retrying on a name collision.
	f, err := os.CreateTemp(dir, TempPrefix+"*")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("atomicfile: write %s: directory %s does not exist; create it first: %w", path, dir, err)
		}
		return fmt.Errorf("atomicfile: write %s: create temporary file in %s: %w", path, dir, err)
	}
	tmp := f.Name()
	closed := false
	renamed := false
	defer func() {
		// Also runs while a panic from the write function unwinds.
		if renamed {
			return
		}
		if !closed {
			_ = f.Close()
		}
		_ = os.Remove(tmp)
	}()

	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("atomicfile: write %s: set mode %v: %w", path, perm, err)
	}
	if err := fill(f); err != nil {
		return fmt.Errorf("atomicfile: write %s: %w", path, err)
	}
	if durable {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("atomicfile: write %s: fsync: %w", path, err)
		}
	}
	closed = true
	if err := f.Close(); err != nil {
		return fmt.Errorf("atomicfile: write %s: close: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("atomicfile: write %s: rename into place: %w", path, err)
	}
	renamed = true
	if !durable {
		return nil
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("atomicfile: write %s: the new content is in place but fsync of directory %s failed: %w", path, dir, err)
	}
	return nil
}

// SyncDir makes a new entry or rename in dir durable. Filesystems that
// cannot fsync a directory (EINVAL, ENOTSUP) are not an error, nor is
// Windows, where a directory cannot be opened for syncing. Code that
// creates or links files itself (the chat log, chat_keep) uses it too.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		return nil
	}
	return err
}
