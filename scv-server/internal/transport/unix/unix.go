// Package unix is the daemon's local-socket transport: a Unix stream
// socket in $SCV_HOME/run (directory 0700, socket 0600) whose every
// connection is checked with SO_PEERCRED and refused unless its peer runs
// as the daemon's own user. Like package stdio it knows nothing of JSON;
// each accepted connection is an ndjson.Transport.
package unix

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	sysunix "golang.org/x/sys/unix"

	"github.com/scv-cli/scv/shared/paths"
)

// SocketMode is the mode of the socket file, DirMode its directory's.
const (
	SocketMode fs.FileMode = 0o600
	DirMode    fs.FileMode = 0o700
)

// Listener accepts connections of the daemon's own user.
type Listener struct {
	ln   *net.UnixListener
	path string
	uid  uint32
}

// ErrInUse is returned by Listen when another process answers on the
// socket path.
var ErrInUse = errors.New("another process is listening on the socket")

// Listen listens on the socket path. Its directory is created 0700 (and an
// existing one set to 0700, since the socket is only as private as its
// directory). A socket file left by a daemon that died is removed; a live
// one (something answers) is ErrInUse; anything but a socket at path is
// refused, never removed.
func Listen(path string) (*Listener, error) {
	dir := filepath.Dir(path)
	if err := paths.EnsureDir(dir); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, DirMode); err != nil {
		return nil, fmt.Errorf("cannot make the socket directory %s private (mode 0700): %w", dir, err)
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", path, err)
	}
	// The directory is 0700, so nobody else can reach the socket in the
	// moment before this chmod; the mode is still set exactly.
	if err := os.Chmod(path, SocketMode); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("cannot set the mode of the socket %s to 0600: %w", path, err)
	}
	ln.SetUnlinkOnClose(true)
	return &Listener{ln: ln, path: path, uid: uint32(os.Getuid())}, nil
}

// removeStale removes a socket at path that nobody listens on.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot inspect %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket (%v); move it away so the daemon can listen there", path, fi.Mode().Type())
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		_ = c.Close()
		return fmt.Errorf("%w: %s answers; stop the other daemon first (scv daemon stop)", ErrInUse, path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove the stale socket %s: %w", path, err)
	}
	return nil
}

// Path returns the socket's path.
func (l *Listener) Path() string { return l.path }

// Close stops listening and removes the socket file.
func (l *Listener) Close() error { return l.ln.Close() }

// RefusedError is an accepted connection whose peer is another user.
type RefusedError struct {
	PeerUID, OwnUID uint32
	PeerPid         int32
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refused a connection from uid %d (pid %d): this daemon serves only uid %d", e.PeerUID, e.PeerPid, e.OwnUID)
}

// CheckPeer decides whether a peer with peerUID may use the daemon of
// ownUID: only the same user may. (Root gets no exception: the daemon runs
// the user's tools with the user's files and keys.)
func CheckPeer(peerUID, ownUID uint32, peerPid int32) error {
	if peerUID != ownUID {
		return &RefusedError{PeerUID: peerUID, OwnUID: ownUID, PeerPid: peerPid}
	}
	return nil
}

// Accept waits for the next connection. A connection whose peer fails
// CheckPeer is returned with a *RefusedError (and the connection, so the
// caller can tell the peer why before closing it); other errors are the
// listener's.
func (l *Listener) Accept() (*Conn, error) {
	c, err := l.ln.AcceptUnix()
	if err != nil {
		return nil, err
	}
	cred, err := PeerCred(c)
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("reading the peer credentials of a connection: %w", err)
	}
	conn := &Conn{c: c, PeerPid: cred.Pid, PeerUID: cred.Uid}
	if err := CheckPeer(cred.Uid, l.uid, cred.Pid); err != nil {
		return conn, err
	}
	return conn, nil
}

// PeerCred returns the SO_PEERCRED credentials of c's peer.
func PeerCred(c *net.UnixConn) (*sysunix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *sysunix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = sysunix.GetsockoptUcred(int(fd), sysunix.SOL_SOCKET, sysunix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if credErr != nil {
		return nil, credErr
	}
	return cred, nil
}

// Conn is one accepted connection: an ndjson.Transport.
type Conn struct {
	c       *net.UnixConn
	PeerPid int32
	PeerUID uint32
}

// Read reads from the peer.
func (c *Conn) Read(p []byte) (int, error) { return c.c.Read(p) }

// Write writes to the peer.
func (c *Conn) Write(p []byte) (int, error) { return c.c.Write(p) }

// Close closes the connection, unblocking a pending Read or Write.
func (c *Conn) Close() error { return c.c.Close() }

// Refuse writes msg to the peer (bounded by a short deadline, so a peer
// that does not read cannot hold the daemon) and closes the connection.
func (c *Conn) Refuse(msg []byte) {
	_ = c.c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.c.Write(msg)
	_ = c.c.Close()
}

// Dial connects to the daemon's socket at path.
func Dial(path string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("no daemon listens on %s (start one with `scv daemon start`): %w", path, err)
		}
		return nil, err
	}
	return c, nil
}
