package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SweepTemps removes the temporary files a crashed write left under dir
// (names starting with TempPrefix) whose last change is older than age, so
// that a write still in progress is never touched. It walks dir without
// following symbolic links and returns how many files it removed; a
// missing dir is no error. Errors of single entries are joined and the
// walk goes on.
func SweepTemps(dir string, age time.Duration) (int, error) {
	cutoff := time.Now().Add(-age)
	removed := 0
	var errs []error
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			errs = append(errs, err)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(d.Name(), TempPrefix) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			return nil
		}
		if info.ModTime().After(cutoff) {
			return nil
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			return nil
		}
		removed++
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	return removed, errors.Join(errs...)
}
