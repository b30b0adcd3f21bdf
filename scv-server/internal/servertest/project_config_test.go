//go:build linux

package servertest_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/testkit"
)

// projectWorkspace returns a workspace whose .scv/config.toml is text, and
// the file's path.
func projectWorkspace(t *testing.T, text string) (string, string) {
	t.Helper()
	ws := t.TempDir()
	if err := os.MkdirAll(paths.ProjectDir(ws), 0o700); err != nil {
		t.Fatal(err)
	}
	file := paths.ProjectConfigFile(ws)
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return ws, file
}

func startIn(t *testing.T, s *st.Server, ws string) string {
	t.Helper()
	return s.Client.StartSession(ws, 3).SessionID
}

func TestProjectApprovalPolicyIsPerSession(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	s.Client.Init(3)
	strict, _ := projectWorkspace(t, "[tools]\napproval_policy = \"never\"\n")
	plain := t.TempDir()

	// The project's "never" denies the call without asking.
	f.Enqueue(
		fo.Script(fo.ToolCall("b1", "bash", `{"command":"touch ran"}`)),
		fo.Script(fo.Text("done")),
	)
	sid := startIn(t, s, strict)
	s.Client.Turn(sid, "run it")
	evs, _ := st.Until[*protocol.TurnCompleted](s.Client)
	if strings.Contains(st.Kinds(evs), "approval.requested") || strings.Contains(st.Kinds(evs), "tool.started") {
		t.Fatalf("the project's never policy asked or ran: %s", st.Kinds(evs))
	}
	var done *protocol.ToolCompleted
	for _, e := range evs {
		if tc, ok := e.(*protocol.ToolCompleted); ok {
			done = tc
		}
	}
	if done == nil || done.Success || !strings.Contains(done.Output, "denied") {
		t.Fatalf("tool.completed = %+v", done)
	}
	if _, err := os.Stat(filepath.Join(strict, "ran")); err == nil {
		t.Fatal("the denied command ran")
	}

	// Another workspace of the same server keeps the user's on-risk.
	f.Enqueue(
		fo.Script(fo.ToolCall("b2", "bash", `{"command":"touch ran"}`)),
		fo.Script(fo.Text("done")),
	)
	sid2 := startIn(t, s, plain)
	s.Client.Turn(sid2, "run it")
	_, req := st.Until[*protocol.ApprovalRequested](s.Client)
	if req.Name != "bash" || req.SessionID != sid2 {
		t.Fatalf("approval.requested = %+v", req)
	}
	s.Client.Send(&protocol.ApprovalResolve{RequestID: "a", SessionID: sid2, ApprovalID: req.ApprovalID, Approved: false})
	st.Until[*protocol.TurnCompleted](s.Client)
}

func TestProjectProviderIsIgnoredWithAWarning(t *testing.T) {
	t.Parallel()
	var logs testkit.Buffer
	f, s := fake(t, "", st.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	s.Client.Init(3)
	ws, file := projectWorkspace(t, "[provider]\nactive = \"evil\"\n\n[tools]\noutput_limit_bytes = 2048\n")
	f.Enqueue(fo.Script(fo.Text("hi")))
	sid := startIn(t, s, ws)
	s.Client.Turn(sid, "hello")
	st.Until[*protocol.TurnCompleted](s.Client)
	if reqs := f.Requests(); len(reqs) != 1 {
		t.Fatalf("the configured provider got %d requests, want 1", len(reqs))
	}
	log := logs.String()
	if !strings.Contains(log, "level=WARN") || !strings.Contains(log, file+":2") || !strings.Contains(log, `provider.active`) ||
		!strings.Contains(log, "is ignored") {
		t.Fatalf("no warning about the project's [provider]:\n%s", log)
	}
}

func TestMalformedProjectConfigRefusesTheSession(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text string
		want       []string // parts of the error message; $FILE is the file
	}{
		{"validation", "[tools]\napproval_policy = \"sometimes\"\n",
			[]string{"$FILE:2:", `"tools.approval_policy"`, `"sometimes"`, `use "on-risk", "never" or "auto"`, "session was not started"}},
		{"syntax", "[tools\n", []string{"$FILE:1:", "invalid TOML", "fix the syntax"}},
		{"unknown key", "[tools]\naproval_policy = \"never\"\n",
			[]string{"$FILE:2:", `did you mean "tools.approval_policy"?`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, s := fake(t, "", st.Options{})
			s.Client.Init(3)
			ws, file := projectWorkspace(t, tt.text)
			s.Client.Send(&protocol.SessionStart{RequestID: "s1", Cwd: ws})
			e := s.Client.ExpectError(protocol.ErrInvalidRequest)
			for _, w := range tt.want {
				if w = strings.ReplaceAll(w, "$FILE", file); !strings.Contains(e.Message, w) {
					t.Errorf("message %q does not contain %q", e.Message, w)
				}
			}
			if e.Fatal || e.RequestID != "s1" {
				t.Errorf("error = %+v", e)
			}
			// The server still starts sessions elsewhere.
			f.Enqueue(fo.Script(fo.Text("hi")))
			sid := startIn(t, s, t.TempDir())
			s.Client.Turn(sid, "hello")
			st.Until[*protocol.TurnCompleted](s.Client)
		})
	}
}
