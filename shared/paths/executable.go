package paths

import (
	"errors"
	"io/fs"
	"os"
)

// CheckExecutable reports why the file at p cannot be run as a program, in
// words that follow its path ("it is not executable"), or nil. scv and
// scv-tui use it to check the sibling binaries they start.
func CheckExecutable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errors.New("no such file")
		}
		return err
	}
	if st.IsDir() {
		return errors.New("it is a directory")
	}
	if st.Mode().Perm()&0o111 == 0 {
		return errors.New("it is not executable")
	}
	return nil
}
