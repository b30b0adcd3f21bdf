// Package daemonfile reads and writes the daemon's description,
// $SCV_HOME/run/daemon.json: what `scv daemon status` and clients read to
// find the running daemon (its pid, version, start time and socket). The
// daemon writes it once it listens and removes it when it exits; a file
// whose pid no longer runs is stale (a daemon killed with SIGKILL).
package daemonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/statefile"
)

// Info describes a running daemon.
type Info struct {
	// Pid is the daemon's process id.
	Pid int `json:"pid"`
	// Version is the daemon's SCV version.
	Version string `json:"version"`
	// StartedAt is when the daemon started listening.
	StartedAt time.Time `json:"started_at"`
	// Socket is the path of the daemon's Unix socket.
	Socket string `json:"socket"`
	// Instance is random for each start, so a client can tell a daemon
	// that re-executed itself (same pid) from the one before.
	Instance string `json:"instance"`
	// ProtocolVersions are the oldest and latest protocol versions the
	// daemon serves.
	ProtocolVersions [2]int `json:"protocol_versions"`
}

// maxBytes bounds what Read accepts: the file is a few hundred bytes.
const maxBytes = 64 << 10

// Write stores info in home's daemon.json (0600, atomically).
func Write(home string, info Info) error {
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(paths.DaemonInfoFile(home), append(data, '\n'), 0o600)
}

// ErrNotRunning is returned by Read when there is no daemon.json.
var ErrNotRunning = errors.New("no daemon is running")

// Read returns home's daemon.json, or an error wrapping ErrNotRunning when
// there is none. It does not check that the pid still runs.
func Read(home string) (Info, error) {
	file := paths.DaemonInfoFile(home)
	data, err := statefile.ReadFile(filepath.Dir(file), filepath.Base(file), maxBytes, statefile.NoLinks)
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("%w (no %s)", ErrNotRunning, file)
	}
	if err != nil {
		return Info{}, err
	}
	var info Info
	if err := json.Unmarshal(data, &info); err != nil {
		return Info{}, fmt.Errorf("%s is not a daemon description (%w); remove it if no daemon runs", file, err)
	}
	return info, nil
}

// Remove deletes home's daemon.json; a missing file is not an error.
func Remove(home string) error {
	err := os.Remove(paths.DaemonInfoFile(home))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Running returns home's daemon.json when its pid runs, and an error
// wrapping ErrNotRunning otherwise: no file, or a stale one (a daemon
// killed with SIGKILL, or dead and not yet reaped).
func Running(home string) (Info, error) {
	info, err := Read(home)
	if err != nil {
		return info, err
	}
	if !Alive(info.Pid) {
		return info, fmt.Errorf("%w (daemon.json names pid %d, which no longer runs)", ErrNotRunning, info.Pid)
	}
	return info, nil
}

// Alive reports whether pid runs: signal 0 reaches it (EPERM: it runs as
// another user) and it is not a zombie, dead but not yet reaped by its
// parent (a daemon that `scv daemon start` left to init).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
