package scvconn

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/bridgetest"
	"github.com/scv-cli/scv/scv-bridge/internal/core"
	"github.com/scv-cli/scv/scv-bridge/internal/store"
	"github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/testkit/bins"
)

func TestMain(m *testing.M) { os.Exit(bridgetest.Main(m)) }

// bridge is the real scv-server (scripted fake model) behind the core.
type bridge struct {
	t     *testing.T
	model *fakeopenai.Server
	st    *store.Store
	core  *core.Core
	conn  *Conn
}

func newBridge(t *testing.T, replies ...fakeopenai.Reply) *bridge {
	t.Helper()
	model := fakeopenai.Start(t, replies...)
	dir := t.TempDir()
	home := filepath.Join(dir, "scvhome")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(model.Config("")), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "SCV_HOME="+home)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := Start(ctx, bins.Need(t, "scv-server"), env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, "bridge.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := &bridge{t: t, model: model, st: st, conn: conn}
	b.core = core.New(core.Config{Platform: "feishu", Account: "work", Owner: "ou_owner",
		Archive: filepath.Join(home, "archive"), Cwd: dir, Quiet: 20 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, st, conn, nil)
	rctx, rcancel := context.WithCancel(context.Background())
	if err := b.core.Start(rctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rcancel()
		b.core.Wait()
		_ = conn.Close()
		_ = st.Close()
	})
	return b
}

func (b *bridge) say(id, conv, sender, text string) {
	b.t.Helper()
	if err := b.core.Accept(core.Message{ID: id, Conversation: conv, Sender: sender, Direct: true, Text: text}); err != nil {
		b.t.Fatal(err)
	}
}

func (b *bridge) replies(n int) []string {
	b.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		rows, _ := b.st.Rows("")
		if len(rows) >= n {
			var out []string
			for _, r := range rows {
				var rp core.Reply
				_ = json.Unmarshal(r.Payload, &rp)
				out = append(out, rp.Text)
			}
			return out
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out waiting for %d replies, have %d", n, len(rows))
		}
	}
}

func TestOwnerGetsToolsStrangerDoesNot(t *testing.T) {
	t.Parallel()
	b := newBridge(t, fakeopenai.Script(fakeopenai.Text("Hi owner.")), fakeopenai.Script(fakeopenai.Text("Hi stranger.")))
	b.say("m1", "oc_owner", "ou_owner", "hello")
	if got := b.replies(1); got[0] != "Hi owner." {
		t.Fatalf("owner's reply %q", got)
	}
	b.say("m2", "oc_other", "ou_someone", "hello")
	if got := b.replies(2); got[1] != "Hi stranger." {
		t.Fatalf("stranger's reply %q", got)
	}
	reqs := b.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	owner, stranger := strings.Join(reqs[0].ToolNames(), ","), reqs[1].ToolNames()
	if !strings.Contains(owner, "chat_history") || !strings.Contains(owner, "chat_attach") {
		t.Fatalf("the owner's tools %s lack the chat tools", owner)
	}
	if len(stranger) != 0 {
		t.Fatalf("a stranger's session offered tools %v", stranger)
	}
}

func TestStopMidTurnOverTheProtocol(t *testing.T) {
	t.Parallel()
	b := newBridge(t, fakeopenai.Script(fakeopenai.Text("thinking"), fakeopenai.Hang()),
		fakeopenai.Script(fakeopenai.Text("Fresh answer.")))
	b.say("m1", "oc_owner", "ou_owner", "take your time")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := b.model.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	b.say("m2", "oc_owner", "ou_owner", "/stop")
	if got := b.replies(1); got[0] != "Stopped." {
		t.Fatalf("reply %q", got)
	}
	b.say("m3", "oc_owner", "ou_owner", "again")
	if got := b.replies(2); got[1] != "Fresh answer." {
		t.Fatalf("after /stop the session answered %q", got)
	}
}

func TestServerExitFailsTheTurn(t *testing.T) {
	t.Parallel()
	b := newBridge(t)
	b.conn.proc.KillGroup()
	<-b.conn.Done()
	if err := b.conn.Err(); err == nil {
		t.Fatal("no error after the server died")
	}
	s, err := b.conn.Start(context.Background(), protocolStart(), nil)
	if err == nil || s != nil {
		t.Fatalf("Start on a dead connection = %v, %v", s, err)
	}
}

func protocolStart() protocol.SessionStart { return protocol.SessionStart{Cwd: os.TempDir()} }
