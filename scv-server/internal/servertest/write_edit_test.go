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

// TestWriteAndEditThroughTheProtocol drives write and edit calls from a
// scripted model: each asks for approval with filesystem risk and its
// summary; approved, the file changes; denied, it does not and the model
// reads the denial.
func TestWriteAndEditThroughTheProtocol(t *testing.T) {
	t.Parallel()
	const original = "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"
	edited := strings.Replace(original, `"hi"`, `"hello"`, 1)
	tests := []struct {
		name, tool, args, summary string
		// file is checked afterwards: after approves, before otherwise.
		file, before, after string
		resultHas           []string
	}{
		{
			name: "write create", tool: "write",
			args:    `{"path":"notes/todo.md","content":"- ship it\n","mode":"create"}`,
			summary: "Write notes/todo.md (create, 10 bytes)",
			file:    "notes/todo.md", after: "- ship it\n",
			resultHas: []string{"Created notes/todo.md", "wrote 10 bytes", "sha256 "},
		},
		{
			name: "write replace", tool: "write",
			args:    `{"path":"main.go","content":"package main\n\nfunc main() {}\n","mode":"replace"}`,
			summary: "Write main.go (replace, 29 bytes, +1 -3 lines)",
			file:    "main.go", before: original, after: "package main\n\nfunc main() {}\n",
			resultHas: []string{"Replaced main.go", "+1 -3 lines"},
		},
		{
			name: "edit", tool: "edit",
			args:    `{"path":"main.go","old_string":"println(\"hi\")","new_string":"println(\"hello\")"}`,
			summary: "Edit main.go (1 replacement, +1 -1 lines)",
			file:    "main.go", before: original, after: edited,
			resultHas: []string{"Edited main.go: 1 replacement", "--- a/main.go", "+\tprintln(\"hello\")"},
		},
	}
	for _, tc := range tests {
		for _, approve := range []bool{true, false} {
			name := tc.name + "/denied"
			if approve {
				name = tc.name + "/approved"
			}
			t.Run(name, func(t *testing.T) {
				f, s := fake(t, "", st.Options{})
				sid, cwd := session(t, s, 3)
				if err := os.WriteFile(filepath.Join(cwd, "main.go"), []byte(original), 0o644); err != nil {
					t.Fatal(err)
				}
				f.Enqueue(fo.Script(fo.ToolCall("c1", tc.tool, tc.args)), fo.Script(fo.Text("done")))
				c := s.Client
				c.Turn(sid, "change the file")
				_, req := st.Until[*protocol.ApprovalRequested](c)
				if req.Risk != protocol.RiskFilesystem || req.Summary != tc.summary || req.Cwd != cwd {
					t.Fatalf("approval.requested = %+v, want risk filesystem and summary %q", req, tc.summary)
				}
				c.Send(&protocol.ApprovalResolve{RequestID: "a", SessionID: sid, ApprovalID: req.ApprovalID, Approved: approve})
				evs, _ := st.Until[*protocol.TurnCompleted](c)
				var done *protocol.ToolCompleted
				started := false
				for _, e := range evs {
					switch e := e.(type) {
					case *protocol.ToolCompleted:
						done = e
					case *protocol.ToolStarted:
						started = true
					}
				}
				if done == nil {
					t.Fatalf("no tool.completed in %s", st.Kinds(evs))
				}
				got, err := os.ReadFile(filepath.Join(cwd, filepath.FromSlash(tc.file)))
				m := f.Requests()[1].Messages
				last := m[len(m)-1]
				if approve {
					if !started || !done.Success || err != nil || string(got) != tc.after {
						t.Fatalf("approved: started %v, %+v; file %q, %v", started, done, got, err)
					}
					for _, w := range tc.resultHas {
						if !strings.Contains(done.Output, w) || !strings.Contains(last.Content, w) {
							t.Errorf("the result (and what the model read) lacks %q: %q", w, last.Content)
						}
					}
					return
				}
				if started || done.Success || !strings.Contains(done.Output, "denied") {
					t.Fatalf("denied: started %v, %+v", started, done)
				}
				if tc.before == "" {
					if !os.IsNotExist(err) {
						t.Fatalf("denied, yet %s exists: %q, %v", tc.file, got, err)
					}
				} else if string(got) != tc.before {
					t.Fatalf("denied, yet %s changed to %q", tc.file, got)
				}
				if last.Role != "tool" || !strings.Contains(last.Content, "denied") {
					t.Fatalf("the model did not read the denial: %+v", last)
				}
			})
		}
	}
}

// TestWriteRefusedBeforeApproval: a write that cannot succeed is refused
// without asking, and the model reads why.
func TestWriteRefusedBeforeApproval(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, cwd := session(t, s, 3)
	if err := os.WriteFile(filepath.Join(cwd, "a.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.Enqueue(fo.Script(
		fo.ToolCall("c1", "write", `{"path":"a.txt","content":"y","mode":"create"}`),
		fo.ToolCall("c2", "edit", `{"path":"a.txt","old_string":"nope","new_string":"z"}`),
		fo.ToolCall("c3", "write", `{"path":"../escape.txt","content":"y","mode":"create"}`),
	), fo.Script(fo.Text("ok")))
	s.Client.Turn(sid, "go")
	evs, _ := st.Until[*protocol.TurnCompleted](s.Client)
	var outs []string
	for _, e := range evs {
		switch e := e.(type) {
		case *protocol.ApprovalRequested:
			t.Fatalf("asked for approval of a call that cannot succeed: %+v", e)
		case *protocol.ToolCompleted:
			if e.Success {
				t.Fatalf("%s succeeded: %s", e.CallID, e.Output)
			}
			outs = append(outs, e.Output)
		}
	}
	if len(outs) != 3 || !strings.Contains(outs[0], "already exists") || !strings.Contains(outs[1], "0 matches") || !strings.Contains(outs[2], "leaves the workspace") {
		t.Fatalf("outputs = %q", outs)
	}
	if b, _ := os.ReadFile(filepath.Join(cwd, "a.txt")); string(b) != "x" {
		t.Fatalf("a.txt = %q", b)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(cwd), "escape.txt")); err == nil {
		t.Fatal("a file was written outside the workspace")
	}
}
