package server

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/dialect/appserver"
	"github.com/scv-cli/scv/shared/paths"
)

// DebugAppServer runs one scripted turn through the whole App Server
// facade (`scv debug app-server send-message`): the built-in demo model
// (a runtime in a temporary SCV home with no provider configured) and a
// client that sends initialize, thread/start, turn/start with message,
// denies the demo's approval request, and sends thread/read. Every line is
// printed to out as it crosses, "<<" from the client and ">>" from the
// server, so a client author can compare theirs.
func DebugAppServer(ctx context.Context, message string, out io.Writer) error {
	home, err := os.MkdirTemp("", "scv-app-server-debug-")
	if err != nil {
		return fmt.Errorf("creating a temporary SCV home: %w", err)
	}
	defer os.RemoveAll(home)
	ws := filepath.Join(home, "workspace")
	if err := os.Mkdir(ws, 0o700); err != nil {
		return err
	}
	rt, err := New(Options{Env: paths.MapEnv(map[string]string{"SCV_HOME": home})})
	if err != nil {
		return err
	}
	cr, aw := io.Pipe()
	ar, cw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- rt.ServeAppServer(context.Background(), struct {
			io.Reader
			io.Writer
		}{ar, aw})
		_ = aw.Close()
	}()
	c := appserver.NewClient(cr, cw)
	c.Trace = func(dir string, line []byte) { fmt.Fprintf(out, "%s %s\n", dir, line) }
	err = debugSession(ctx, c, ws, message)
	_ = cw.Close()
	if serr := <-done; err == nil {
		err = serr
	}
	_, _ = io.Copy(io.Discard, cr) // the reader ends with the server's output
	return err
}

// debugSession is the client's side of DebugAppServer.
func debugSession(ctx context.Context, c *appserver.Client, ws, message string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.Call(ctx, "initialize", appserver.InitializeParams{ClientInfo: &appserver.ClientInfo{Name: "scv-debug", Version: "1"}}, nil); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if err := c.Notify("initialized", nil); err != nil {
		return err
	}
	var th appserver.Thread
	if err := c.Call(ctx, "thread/start", appserver.ThreadStartParams{AgentKey: appserver.DefaultAgentKey, Cwd: ws}, &th); err != nil {
		return fmt.Errorf("thread/start: %w", err)
	}
	if err := c.Call(ctx, "turn/start", appserver.TurnStartParams{ThreadID: th.ThreadID, Input: []appserver.InputItem{{Type: "text", Text: message}}}, nil); err != nil {
		return fmt.Errorf("turn/start: %w", err)
	}
	for {
		m, err := c.Next(ctx)
		if err != nil {
			return fmt.Errorf("waiting for turn/completed: %w", err)
		}
		if m.Method == "approval/request" {
			// Denied: the debug session never changes anything.
			if err := c.Respond(m.ID, appserver.ApprovalDecision{Decision: appserver.DecisionDeny}); err != nil {
				return err
			}
		}
		if m.Method == "turn/completed" {
			break
		}
	}
	if _, err := c.Until(ctx, func(m appserver.Message) bool { return m.Method == "thread/status/changed" }); err != nil {
		return err
	}
	if err := c.Call(ctx, "thread/read", appserver.ResumeParams{ThreadID: th.ThreadID}, nil); err != nil {
		return fmt.Errorf("thread/read: %w", err)
	}
	return nil
}
