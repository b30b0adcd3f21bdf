package servertest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestEditDiffAndDenyWithFeedback: a v4 client sees the diff an edit would
// make in approval.requested, and a denial with feedback reaches the model
// in the call's result; the file is untouched.
func TestEditDiffAndDenyWithFeedback(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, cwd := session(t, s, protocol.Version4)
	if err := os.WriteFile(filepath.Join(cwd, "main.go"), []byte("package main\n\nvar x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.Enqueue(
		fo.Script(fo.ToolCall("e1", "edit", `{"path":"main.go","old_string":"var x = 1","new_string":"var x = 2"}`)),
		fo.Script(fo.Text("understood")),
	)
	c := s.Client
	c.Turn(sid, "change x")
	_, req := st.Until[*protocol.ApprovalRequested](c)
	if !strings.Contains(req.Diff, "-var x = 1\n+var x = 2\n") || !strings.HasPrefix(req.Diff, "--- a/") {
		t.Fatalf("approval.requested diff = %q, want the edit's unified diff", req.Diff)
	}
	// Feedback only goes with a denial.
	c.Send(&protocol.ApprovalResolve{RequestID: "bad", SessionID: sid, ApprovalID: req.ApprovalID, Approved: true, Feedback: "why"})
	if e := st.Expect[*protocol.Error](c); e.Code != protocol.ErrInvalidRequest || !strings.Contains(e.Message, "denial") {
		t.Fatalf("approved with feedback: %+v", e)
	}
	c.Send(&protocol.ApprovalResolve{RequestID: "a", SessionID: sid, ApprovalID: req.ApprovalID, Feedback: "Keep x at 1; change y instead."})
	st.Until[*protocol.TurnCompleted](c)
	tool := lastToolMessage(t, f)
	if !strings.Contains(tool, "denied") || !strings.Contains(tool, "Keep x at 1; change y instead.") {
		t.Fatalf("the model read %q, want the denial with the user's reason", tool)
	}
	if b, _ := os.ReadFile(filepath.Join(cwd, "main.go")); string(b) != "package main\n\nvar x = 1\n" {
		t.Fatalf("the denied edit changed the file: %q", b)
	}
}

// TestWritePreviewInApproval: a write's approval carries the new file's
// lines as a diff against what is there (nothing, for a new file).
func TestWritePreviewInApproval(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, protocol.Version4)
	f.Enqueue(
		fo.Script(fo.ToolCall("w1", "write", `{"path":"notes.txt","content":"one\ntwo\n","mode":"create"}`)),
		fo.Script(fo.Text("ok")),
	)
	c := s.Client
	c.Turn(sid, "write notes")
	_, req := st.Until[*protocol.ApprovalRequested](c)
	if !strings.Contains(req.Diff, "+one\n+two\n") {
		t.Fatalf("approval.requested diff = %q, want the new file's lines", req.Diff)
	}
	c.Send(&protocol.ApprovalResolve{RequestID: "a", SessionID: sid, ApprovalID: req.ApprovalID})
	st.Until[*protocol.TurnCompleted](c)
}
