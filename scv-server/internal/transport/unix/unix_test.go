package unix

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCheckPeer(t *testing.T) {
	t.Parallel()
	if err := CheckPeer(1000, 1000, 7); err != nil {
		t.Fatalf("same uid refused: %v", err)
	}
	err := CheckPeer(0, 1000, 7)
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("root peer of a uid-1000 daemon: %v, want *RefusedError", err)
	}
	if !strings.Contains(err.Error(), "uid 0") || !strings.Contains(err.Error(), "only uid 1000") {
		t.Errorf("message does not say who was refused: %q", err)
	}
	if CheckPeer(1001, 1000, 7) == nil {
		t.Fatal("another user accepted")
	}
}

// shortDir returns a directory whose socket paths fit in sun_path (108
// bytes); t.TempDir can be too long.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "scvsock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func TestListenModesAndAccept(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(shortDir(t), "run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "scv.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for p, want := range map[string]os.FileMode{dir: DirMode, path: SocketMode} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		if c.PeerPid != int32(os.Getpid()) || c.PeerUID != uint32(os.Getuid()) {
			done <- errors.New("peer credentials are not this process's")
			return
		}
		_, err = c.Write([]byte("hello\n"))
		done <- err
	}()
	c, err := Dial(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "hello\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestStaleSocketRemovedLiveRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(shortDir(t), "run", "scv.sock")
	first, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	// A live listener: a second Listen must not steal its path.
	go func() {
		for {
			c, err := first.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if _, err := Listen(path); !errors.Is(err, ErrInUse) {
		t.Fatalf("Listen over a live socket: %v, want ErrInUse", err)
	}
	first.Close()
	// A stale socket file, as a killed daemon leaves it: bound, and
	// nothing listens on it. (Bound without listen(2), so that a copy of
	// the descriptor in a child forked meanwhile by a parallel test cannot
	// answer either.)
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	syscall.Close(fd)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the stale socket is not there: %v", err)
	}
	second, err := Listen(path)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	second.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("Close left the socket file: %v", err)
	}
}

func TestNotASocketRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(shortDir(t), "scv.sock")
	if err := os.WriteFile(path, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a regular file: %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "mine" {
		t.Error("the regular file was touched")
	}
}

func TestDialNoDaemon(t *testing.T) {
	t.Parallel()
	_, err := Dial(filepath.Join(shortDir(t), "none.sock"), time.Second)
	if err == nil || !strings.Contains(err.Error(), "scv daemon start") {
		t.Fatalf("Dial without a daemon: %v", err)
	}
}

// TestAcceptRefusesOtherUser connects as another user (uid 65534, through
// a child process started with that credential, so the test must run as
// root) to a socket made reachable for the test, and checks that Accept
// reports the refusal with the peer's uid and that Refuse tells the peer.
func TestAcceptRefusesOtherUser(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root to connect as another user")
	}
	// The system's python: the other user cannot read a python under
	// root's home (pyenv's shims).
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	dir := shortDir(t)
	path := filepath.Join(dir, "run", "scv.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Widen what Listen made private, so the other user reaches the
	// socket at all: the peer check is what must refuse it.
	for _, p := range []string{dir, filepath.Dir(path)} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	peer := exec.Command(python, "-c", `
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
data = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    data += b
sys.stdout.write(data.decode())
`, path)
	peer.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out strings.Builder
	peer.Stdout = &out
	if err := peer.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.PeerUID != 65534 || c == nil {
		t.Fatalf("Accept = %v, %v; want a *RefusedError for uid 65534", c, err)
	}
	c.Refuse([]byte(refused.Error() + "\n"))
	if err := peer.Wait(); err != nil {
		t.Fatalf("peer: %v", err)
	}
	if !strings.Contains(out.String(), "refused a connection from uid 65534") {
		t.Fatalf("the peer read %q", out.String())
	}
}
