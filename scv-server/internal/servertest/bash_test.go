//go:build linux

package servertest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/procgroup"
	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// noChildren fails if the test process (a subreaper once a bash call ran
// in it) has a child left.
func noChildren(t *testing.T) {
	t.Helper()
	files, _ := filepath.Glob("/proc/self/task/*/children")
	for _, f := range files {
		if data, _ := os.ReadFile(f); strings.TrimSpace(string(data)) != "" {
			t.Errorf("child processes left: %s", data)
		}
	}
}

func TestBashApprovalAndDenial(t *testing.T) {
	for _, approve := range []bool{true, false} {
		t.Run(map[bool]string{true: "approved", false: "denied"}[approve], func(t *testing.T) {
			f, s := fake(t, "", st.Options{})
			sid, cwd := session(t, s, 3)
			f.Enqueue(
				fo.Script(fo.ToolCall("b1", "bash", `{"command":"echo hello from bash; touch ran"}`)),
				fo.Script(fo.Text("done")),
			)
			c := s.Client
			c.Turn(sid, "run it")
			st.Expect[*protocol.AssistantCompleted](c)
			st.Expect[*protocol.ToolProposed](c)
			req := st.Expect[*protocol.ApprovalRequested](c)
			if req.Risk != protocol.RiskProcess || req.Name != "bash" || req.Cwd != cwd ||
				req.Summary != "Run shell command: echo hello from bash; touch ran" {
				t.Fatalf("approval.requested = %+v", req)
			}
			c.Send(&protocol.ApprovalResolve{RequestID: "a", SessionID: sid, ApprovalID: req.ApprovalID, Approved: approve})
			evs, _ := st.Until[*protocol.TurnCompleted](c)
			var done *protocol.ToolCompleted
			for _, e := range evs {
				if tc, ok := e.(*protocol.ToolCompleted); ok {
					done = tc
				}
			}
			started := strings.Contains(st.Kinds(evs), "tool.started")
			_, err := os.Stat(filepath.Join(cwd, "ran"))
			ran := err == nil
			tool := lastToolMessage(t, f)
			if approve {
				if !started || !ran || done == nil || !done.Success || done.Output != "exit 0\nhello from bash\n" {
					t.Fatalf("events %s, tool.completed %+v, ran %v", st.Kinds(evs), done, ran)
				}
				if tool != "exit 0\nhello from bash\n" {
					t.Fatalf("the model read %q", tool)
				}
			} else {
				if started || ran || done == nil || done.Success || !strings.Contains(done.Output, "denied") {
					t.Fatalf("events %s, tool.completed %+v, ran %v", st.Kinds(evs), done, ran)
				}
				if !strings.Contains(tool, "denied") {
					t.Fatalf("the model read %q", tool)
				}
			}
			noChildren(t)
		})
	}
}

func lastToolMessage(t *testing.T, f *fo.Server) string {
	t.Helper()
	reqs := f.Requests()
	if len(reqs) < 2 {
		t.Fatalf("%d provider requests, want 2", len(reqs))
	}
	m := reqs[1].Messages
	if last := m[len(m)-1]; last.Role == "tool" {
		return last.Content
	}
	t.Fatalf("the last message is not a tool result: %+v", m[len(m)-1])
	return ""
}

func TestBashTimeoutCeiling(t *testing.T) {
	t.Parallel()
	// The configured ceiling is the schema's maximum, and a larger request
	// fails before approval, naming the ceiling.
	f, s := fake(t, "\n[tools]\ncommand_timeout_seconds = 30\nmax_timeout_seconds = 100\n", st.Options{})
	sid, _ := session(t, s, 3)
	f.Enqueue(
		fo.Script(fo.ToolCall("b1", "bash", `{"command":"touch ran","timeout_seconds":101}`)),
		fo.Script(fo.Text("ok")),
	)
	s.Client.Turn(sid, "go")
	evs, _ := st.Until[*protocol.TurnCompleted](s.Client)
	kinds := st.Kinds(evs)
	if strings.Contains(kinds, "approval.requested") || strings.Contains(kinds, "tool.started") {
		t.Fatalf("the call went on to approval or ran: %s", kinds)
	}
	tool := lastToolMessage(t, f)
	if !strings.Contains(tool, "timeout_seconds") || !strings.Contains(tool, "100") {
		t.Fatalf("the model read %q, want a refusal naming the ceiling", tool)
	}
	var schema struct {
		Properties struct {
			Timeout struct {
				Maximum int `json:"maximum"`
			} `json:"timeout_seconds"`
		} `json:"properties"`
	}
	var found bool
	for _, tl := range f.Requests()[0].Tools {
		if tl.Name == "bash" {
			found = true
			if err := json.Unmarshal(tl.Parameters, &schema); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(tl.Description, "default 30 s, at most 100 s") {
				t.Errorf("description %q", tl.Description)
			}
		}
	}
	if !found || schema.Properties.Timeout.Maximum != 100 {
		t.Fatalf("bash offered %v with maximum %d, want 100", found, schema.Properties.Timeout.Maximum)
	}
}

func TestBashCancelMidCommand(t *testing.T) {
	f, s := fake(t, "", st.Options{ApprovalPolicy: "auto"})
	sid, _ := session(t, s, 3)
	f.Enqueue(
		fo.Script(fo.ToolCall("b1", "bash", `{"command":"trap '' TERM; setsid sleep 300 & echo \"ready $SCV_RUN_TAG\"; sleep 300"}`)),
		fo.Script(fo.Text("after")),
	)
	c := s.Client
	turn := c.Turn(sid, "wait")
	_, p := st.Until[*protocol.ToolProgress](c)
	tag, ok := strings.CutPrefix(p.Line, "ready ")
	if !ok || tag == "" {
		t.Fatalf("tool.progress = %+v", p)
	}
	if len(procgroup.FindTagged(tag)) == 0 {
		t.Fatal("no process carries the call's marker while it runs")
	}
	c.Send(&protocol.TurnCancel{RequestID: "c", SessionID: sid, TurnID: turn.TurnID})
	evs, _ := st.Until[*protocol.TurnCancelled](c)
	if got := st.Kinds(evs); got != "tool.completed turn.cancelled" {
		t.Fatalf("after cancel: %s, want tool.completed then turn.cancelled", got)
	}
	if tc := evs[0].(*protocol.ToolCompleted); tc.Success || !strings.Contains(tc.Output, "cancelled") {
		t.Fatalf("tool.completed = %+v", tc)
	}
	// By turn.cancelled everything the call started is gone.
	if pids := procgroup.FindTagged(tag); len(pids) > 0 {
		t.Fatalf("processes left after turn.cancelled: %v", pids)
	}
	noChildren(t)
	// The session goes on, and the history answers the cancelled call.
	c.Turn(sid, "again")
	st.Until[*protocol.TurnCompleted](c)
	var answered bool
	for _, m := range f.Requests()[1].Messages {
		answered = answered || (m.Role == "tool" && m.ToolCallID == "b1")
	}
	if !answered {
		t.Fatal("the cancelled call has no result in the history")
	}
}
