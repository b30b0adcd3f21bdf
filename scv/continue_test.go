package main_test

import (
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestExecContinue runs scv exec --continue against the real scv-server:
// the second run continues the first one's session, and --json shows the
// replay.
func TestExecContinue(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.Start(t)
	srv.Enqueue(
		fakeopenai.Script(fakeopenai.Text("The answer is 42.")),
		fakeopenai.Script(fakeopenai.Text("I said 42.")),
		fakeopenai.Script(fakeopenai.Text("Hello.")),
		fakeopenai.Script(fakeopenai.Text("Again.")),
	)
	home, ws := fakeHome(t, srv), t.TempDir()

	r := runSCV(t, home, "exec", "--cd", ws, "--continue", "What is the answer?")
	if r.code != 0 || r.stdout != "The answer is 42.\n" || !strings.Contains(r.stderr, "scv: no earlier session in this workspace; starting a new one") {
		t.Fatalf("first run: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = runSCV(t, home, "exec", "--cd", ws, "--continue", "What did you say?")
	if r.code != 0 || r.stdout != "I said 42.\n" || !strings.Contains(r.stderr, "(1 turn): What is the answer?") {
		t.Fatalf("continued run: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	reqs := srv.Requests()
	if got := strings.Join(reqs[1].Roles(), " "); got != "system user assistant user" ||
		reqs[1].Messages[1].Content != "What is the answer?" || reqs[1].Messages[2].Content != "The answer is 42." {
		t.Fatalf("the continued request: %s %+v", got, reqs[1].Messages)
	}

	// Without --continue a run starts afresh; --continue then picks that
	// newer session, and --json prints its replay like every frame.
	if r = runSCV(t, home, "exec", "--cd", ws, "Hello"); r.code != 0 {
		t.Fatalf("fresh run: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if got := strings.Join(srv.Requests()[2].Roles(), " "); got != "system user" {
		t.Fatalf("a run without --continue sent %s", got)
	}
	r = runSCV(t, home, "exec", "--json", "--cd", ws, "--continue", "again")
	if r.code != 0 {
		t.Fatalf("json run: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	var replay []protocol.ReplayItem
	for _, ev := range events(t, r.stdout) {
		switch ev := ev.(type) {
		case *protocol.SessionStarted:
			if !ev.Resumed {
				t.Fatalf("session.started = %+v", ev)
			}
		case *protocol.SessionReplay:
			replay = append(replay, ev.Items...)
		}
	}
	if len(replay) != 2 || replay[0].Text != "Hello" || replay[1].Text != "Hello." {
		t.Fatalf("replay = %+v", replay)
	}
}
