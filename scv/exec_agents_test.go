package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/fakeopenai"
)

// fakeClaude answers like `claude -p --output-format stream-json`. Whether
// the job ends before or after the user's turn, its report turn starts
// only once that turn is over.
const fakeClaude = `#!/bin/bash
for last; do :; done
printf '{"type":"result","subtype":"success","is_error":false,"result":"delegated: %s","session_id":"s-1","usage":{"input_tokens":7,"output_tokens":3}}\n' "$last"
`

// TestExecWaitsForBackgroundReports: scv exec stays open after its turn
// while a background job it started runs, prints the server's report turn,
// and exits 0 once every job was reported.
func TestExecWaitsForBackgroundReports(t *testing.T) {
	srv := fakeopenai.Start(t)
	srv.Enqueue(
		fakeopenai.Script(fakeopenai.ToolCall("call_1", "agent", `{"agent":"claude","prompt":"land the fix","background":true}`)),
		fakeopenai.Script(fakeopenai.Text("Started job-1.")),
		fakeopenai.Script(fakeopenai.Text("job-1 finished: the fix landed.")),
	)
	home, ws := fakeHome(t, srv), t.TempDir()
	// The agent is found in the user's per-user install directory; the file
	// is complete and closed before any process starts.
	userHome := t.TempDir()
	bin := filepath.Join(userHome, ".local", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(fakeClaude), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", userHome)
	r := runSCV(t, home, "exec", "--cd", ws, "--approval-policy", "auto", "delegate it")
	if r.code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", r.code, r.stderr)
	}
	if r.stdout != "Started job-1.\njob-1 finished: the fix landed.\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
	for _, s := range []string{"waiting for 1 background job(s) to report: job-1", "background report (job-1)"} {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	msgs := reqs[2].Messages
	if last := msgs[len(msgs)-1].Content; !strings.HasPrefix(last, "[SCV background report]") || !strings.Contains(last, "delegated: land the fix") {
		t.Errorf("report prompt = %q", last)
	}
}

// TestExecDoesNotWaitForAJobTheModelRead: the model starts a job and reads
// its result with agent_wait in the same turn; no report turn will come,
// and scv exec exits when the turn ends.
func TestExecDoesNotWaitForAJobTheModelRead(t *testing.T) {
	srv := fakeopenai.Start(t)
	srv.Enqueue(
		fakeopenai.Script(fakeopenai.ToolCall("call_1", "agent", `{"agent":"claude","prompt":"land the fix","background":true}`)),
		fakeopenai.Script(fakeopenai.ToolCall("call_2", "agent_wait", `{"job":"job-1"}`)),
		fakeopenai.Script(fakeopenai.Text("It landed.")),
	)
	home, ws := fakeHome(t, srv), t.TempDir()
	userHome := t.TempDir()
	bin := filepath.Join(userHome, ".local", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(fakeClaude), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", userHome)
	r := runSCV(t, home, "exec", "--cd", ws, "--approval-policy", "auto", "delegate it and wait")
	if r.code != 0 || r.stdout != "It landed.\n" {
		t.Fatalf("exit %d, stdout %q; stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, "waiting for") {
		t.Errorf("scv exec waited for a job whose result the model read:\n%s", r.stderr)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d model requests, want 3 (no report turn)", n)
	}
}
