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

// inputKinds lists a Responses request's input items: the type, and for
// reasoning items their id.
func inputKinds(r fo.Request) string {
	var k []string
	for _, it := range r.Input {
		switch it.Type {
		case "message":
			k = append(k, it.Role)
		case "reasoning":
			k = append(k, "reasoning:"+it.ID)
		default:
			k = append(k, it.Type)
		}
	}
	return strings.Join(k, " ")
}

// TestReasoningCarriedAcrossToolCalls: on the Responses wire a reasoning
// model's encrypted reasoning comes back in the next request of the turn,
// right before the calls it led to; it is stored with the session, so
// after a restart and resume the next turn's request still carries it.
func TestReasoningCarriedAcrossToolCalls(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	cfg := st.FakeProviderConfig(f.URL(), "wire_api = \"responses\"\n")
	a := st.Start(t, st.Options{Config: cfg})
	a.Client.Init(3)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("remember: blue\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sid := a.Client.StartSession(dir, 3).SessionID
	f.Enqueue(
		fo.Script(fo.Reasoning("Read the notes first.", "ENC-STEP-1"), fo.ToolCall("call_1", "read", `{"path":"notes.txt"}`)),
		fo.Script(fo.Reasoning("", "ENC-STEP-2"), fo.Text("They say blue.")),
	)
	a.Client.Turn(sid, "What do my notes say?")
	st.Until[*protocol.TurnCompleted](a.Client)

	reqs := f.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, r := range reqs {
		if inc, _ := r.JSON["include"].([]any); len(inc) != 1 || inc[0] != "reasoning.encrypted_content" {
			t.Fatalf("request %d include = %v", i, r.JSON["include"])
		}
	}
	if got := inputKinds(reqs[1]); got != "user reasoning:rs_fake_1 function_call function_call_output" {
		t.Fatalf("second request's input = %s", got)
	}
	if it := reqs[1].Input[1]; it.EncryptedContent != "ENC-STEP-1" || it.Summary != "Read the notes first." {
		t.Fatalf("reasoning item = %+v", it)
	}
	a.Stop()

	b := st.Start(t, st.Options{Config: cfg, Home: a.Home})
	b.Client.Init(3)
	resumeSession(t, b.Client, dir, sid)
	f.Enqueue(fo.Script(fo.Text("Still blue.")))
	b.Client.Turn(sid, "Once more?")
	st.Until[*protocol.TurnCompleted](b.Client)
	reqs = f.Requests()
	last := reqs[len(reqs)-1]
	want := "user reasoning:rs_fake_1 function_call function_call_output reasoning:rs_fake_1 assistant user"
	if got := inputKinds(last); got != want {
		t.Fatalf("input after resume = %s, want %s", got, want)
	}
	if last.Input[1].EncryptedContent != "ENC-STEP-1" || last.Input[4].EncryptedContent != "ENC-STEP-2" {
		t.Fatalf("reasoning items after resume = %+v, %+v", last.Input[1], last.Input[4])
	}
}
