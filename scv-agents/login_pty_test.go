package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/scv-cli/scv/shared/delegate/signin"
)

// TestLoginGetsATerminalWithoutOne: the caller's stdin is a pipe, yet the
// agent's own login runs on a terminal (a pseudo-terminal fed from that
// stdin), so a sign-in screen that needs one works from a script.
func TestLoginGetsATerminalWithoutOne(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := w.run("424242\n", "login", "grok", "--", "--device-auth")
	want(t, r, 0, "Enter the device code", "Signed in to Grok.", "grok: run scv agents status")
	calls, _ := os.ReadFile(filepath.Join(w.scv, "agents/grok/calls"))
	if !strings.Contains(string(calls), "grok login --device-auth tty=yes code=424242") {
		t.Fatalf("grok's login did not run on a terminal with the code typed:\n%s", calls)
	}
}

// ptyRun runs scv-agents with a pseudo-terminal as its terminal, typing
// each input once the output holds its prompt, and returns the output and
// exit code.
func (w *world) ptyRun(steps [][2]string, args ...string) (string, int) {
	w.t.Helper()
	c := exec.Command(binary, args...)
	c.Env = []string{"HOME=" + w.home, "SCV_HOME=" + w.scv, "PATH=" + w.path, "TERM=xterm"}
	term, err := pty.Start(c)
	if err != nil {
		w.t.Fatal(err)
	}
	defer term.Close()
	var mu sync.Mutex
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := term.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	for _, st := range steps {
		deadline := time.Now().Add(20 * time.Second)
		for {
			mu.Lock()
			seen := strings.Contains(out.String(), st[0])
			mu.Unlock()
			if seen {
				break
			}
			if time.Now().After(deadline) {
				_ = c.Process.Kill()
				w.t.Fatalf("no %q prompt; output:\n%s", st[0], out.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := io.WriteString(term, st[1]); err != nil {
			w.t.Fatal(err)
		}
	}
	err = c.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	term.Close()
	<-done
	mu.Lock()
	defer mu.Unlock()
	return out.String(), code
}

// TestDSHLoginOnATerminal: on a terminal, the key is read without echo,
// so it never shows, and stored.
func TestDSHLoginOnATerminal(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	out, code := w.ptyRun([][2]string{{"DeepSeek API key: ", secret + "\r"}}, "login", "dsh")
	if code != 0 || !strings.Contains(out, "dsh: key stored in") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	if strings.Contains(out, secret) {
		t.Fatalf("the key was echoed:\n%s", out)
	}
	data, _ := os.ReadFile(signin.DSHCredentialsPath(w.scv))
	if !strings.Contains(string(data), "DEEPSEEK_API_KEY: "+secret) {
		t.Fatalf("credentials: %s", data)
	}
}

// TestOwnLoginOnATerminal: on a terminal, the agent's own login gets the
// caller's terminal itself.
func TestOwnLoginOnATerminal(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	out, code := w.ptyRun([][2]string{{"Enter the device code: ", "777\r"}}, "login", "grok")
	if code != 0 || !strings.Contains(out, "Signed in to Grok.") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	calls, _ := os.ReadFile(filepath.Join(w.scv, "agents/grok/calls"))
	if !strings.Contains(string(calls), "grok login tty=yes code=777") {
		t.Fatalf("calls:\n%s", calls)
	}
}
