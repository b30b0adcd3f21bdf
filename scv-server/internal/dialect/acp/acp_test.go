package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/goleak"

	delegacp "github.com/scv-cli/scv/scv-server/internal/delegate/transport/acp"
	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/testkit"
)

func TestMain(m *testing.M) {
	restore := testkit.IsolateHome()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { restore(); os.Exit(code) }))
}

// wait bounds every wait; tests never rely on it for ordering.
const wait = 20 * time.Second

// client is a scripted ACP client: it records updates and answers
// permission requests with answer.
type client struct {
	delegacp.NoFileSystemOrTerminal
	mu      sync.Mutex
	updates []acpsdk.SessionNotification
	asked   []acpsdk.RequestPermissionRequest
	changed chan struct{}
	// answer picks the outcome of a permission request; nil selects the
	// option of kind allow_once. It may block until ctx ends (withdrawn).
	answer func(ctx context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error)
}

func (c *client) notify() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func (c *client) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n)
	c.mu.Unlock()
	c.notify()
	return nil
}

func (c *client) RequestPermission(ctx context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked = append(c.asked, p)
	answer := c.answer
	c.mu.Unlock()
	c.notify()
	if answer != nil {
		return answer(ctx, p)
	}
	return selectKind(p, acpsdk.PermissionOptionKindAllowOnce), nil
}

func selectKind(p acpsdk.RequestPermissionRequest, kind acpsdk.PermissionOptionKind) acpsdk.RequestPermissionResponse {
	for _, o := range p.Options {
		if o.Kind == kind {
			return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(o.OptionId)}
		}
	}
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}
}

// until waits for the client's state to satisfy ok.
func (c *client) until(t *testing.T, what string, ok func(c *client) bool) {
	t.Helper()
	deadline := time.After(wait)
	for {
		c.mu.Lock()
		done := ok(c)
		c.mu.Unlock()
		if done {
			return
		}
		select {
		case <-c.changed:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// kinds lists the session updates' kinds in order.
func (c *client) kinds() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range c.updates {
		out = append(out, kindOf(n.Update))
	}
	return out
}

func kindOf(u acpsdk.SessionUpdate) string {
	b, _ := json.Marshal(u)
	var k struct {
		SessionUpdate string `json:"sessionUpdate"`
	}
	_ = json.Unmarshal(b, &k)
	return k.SessionUpdate
}

// text joins the agent message chunks' text.
func (c *client) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, n := range c.updates {
		if m := n.Update.AgentMessageChunk; m != nil && m.Content.Text != nil {
			b.WriteString(m.Content.Text.Text)
		}
	}
	return b.String()
}

func (c *client) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates, c.asked = nil, nil
}

// harness is a runtime served over pipes with an SDK client.
type harness struct {
	t    testing.TB
	f    *fo.Server
	home string
	ws   string
	c    *client
	conn *acpsdk.ClientSideConnection
	p    *st.Piped
}

type harnessOptions struct {
	config string // config.toml; empty: the fake provider
	policy string
	home   string
}

func start(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	f := fo.Start(t)
	home := o.home
	if home == "" {
		home = t.TempDir()
	}
	cfg := o.config
	if cfg == "" {
		cfg = st.FakeProviderConfig(f.URL(), "")
	}
	rt := st.NewRuntime(t, home, cfg, o.policy)
	h := &harness{t: t, f: f, home: home, ws: t.TempDir(), c: &client{changed: make(chan struct{}, 1)}}
	h.p = st.Pipe(t, "ServeACP", wait, rt.ServeACP)
	h.conn = acpsdk.NewClientSideConnection(h.c, h.p.In, h.p.Out)
	t.Cleanup(h.stop)
	return h
}

// stop ends the client's input and waits for the agent to end.
func (h *harness) stop() {
	h.p.Stop()
	<-h.conn.Done()
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return c
}

func (h *harness) init() acpsdk.InitializeResponse {
	h.t.Helper()
	r, err := h.conn.Initialize(ctx(h.t), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber, ClientInfo: &acpsdk.Implementation{Name: "acp-test", Version: "1"}})
	if err != nil {
		h.t.Fatalf("initialize: %v", err)
	}
	return r
}

func (h *harness) newSession() (acpsdk.SessionId, acpsdk.NewSessionResponse) {
	h.t.Helper()
	r, err := h.conn.NewSession(ctx(h.t), acpsdk.NewSessionRequest{Cwd: h.ws, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		h.t.Fatalf("session/new: %v", err)
	}
	return r.SessionId, r
}

func (h *harness) prompt(sid acpsdk.SessionId, text string) (acpsdk.PromptResponse, error) {
	return h.conn.Prompt(ctx(h.t), acpsdk.PromptRequest{SessionId: sid, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(text)}})
}

func reqErr(t *testing.T, err error) *acpsdk.RequestError {
	t.Helper()
	var re *acpsdk.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T) is no JSON-RPC error", err, err)
	}
	return re
}
