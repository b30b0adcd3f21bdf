package daemon

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-server/internal/server"
	"github.com/scv-cli/scv/shared/daemonfile"
	"github.com/scv-cli/scv/shared/paths"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRunServesAndStops runs the daemon in process: it writes daemon.json,
// serves a connection, refuses a second daemon naming its pid, and on the
// end of its context closes the connection, removes its files and leaves
// no goroutine behind (goleak).
func TestRunServesAndStops(t *testing.T) {
	home := t.TempDir()
	env := paths.MapEnv(map[string]string{paths.HomeEnv: home, "HOME": home})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan daemonfile.Info, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Server: server.Options{Env: env}, Ready: func(i daemonfile.Info) { ready <- i }})
	}()
	var info daemonfile.Info
	select {
	case info = <-ready:
	case err := <-done:
		t.Fatalf("Run ended at start: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not get ready")
	}
	if info.Pid != os.Getpid() || info.Socket != paths.SocketFile(home) {
		t.Fatalf("info = %+v", info)
	}
	err := Run(context.Background(), Options{Server: server.Options{Env: env}})
	var running *AlreadyRunningError
	if !errors.As(err, &running) || running.Pid != os.Getpid() {
		t.Fatalf("second Run: %v", err)
	}

	c, err := net.Dial("unix", info.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(`{"type":"initialize","request_id":"1","protocol_version":4}` + "\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil || !strings.Contains(line, `"initialized"`) {
		t.Fatalf("read %q, %v", line, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not end")
	}
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("the connection is still open after the daemon stopped")
	}
	for _, p := range []string{paths.SocketFile(home), paths.DaemonInfoFile(home)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", p, err)
		}
	}
}
