package daemon

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	sysunix "golang.org/x/sys/unix"
)

// AlreadyRunningError is the refusal of a second daemon on one SCV_HOME.
type AlreadyRunningError struct {
	Pid  int // 0 when the holder did not say
	Lock string
}

func (e *AlreadyRunningError) Error() string {
	who := "another daemon"
	if e.Pid > 0 {
		who = fmt.Sprintf("another daemon (pid %d)", e.Pid)
	}
	return fmt.Sprintf("%s already runs for this SCV_HOME (it holds %s); use it, or stop it first with `scv daemon stop`", who, e.Lock)
}

// lockFile is the daemon's exclusive flock. The file holds the holder's
// pid, so a refused daemon can name it even before daemon.json exists.
type lockFile struct{ f *os.File }

// acquire takes the exclusive lock on path without waiting.
func acquire(path string) (*lockFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|sysunix.O_NOFOLLOW|sysunix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot open the daemon lock %s: %w", path, err)
	}
	if err := sysunix.Flock(int(f.Fd()), sysunix.LOCK_EX|sysunix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, sysunix.EWOULDBLOCK) {
			data := make([]byte, 32)
			n, _ := f.ReadAt(data, 0)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(data[:n])))
			return nil, &AlreadyRunningError{Pid: pid, Lock: path}
		}
		return nil, fmt.Errorf("cannot lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &lockFile{f: f}, nil
}

// release drops the lock. The file stays: removing it would race with a
// daemon that opened it and waits to lock it.
func (l *lockFile) release() {
	_ = l.f.Truncate(0)
	_ = l.f.Close()
}
