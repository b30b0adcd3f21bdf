package main_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestProfileRunsWhileTheModelThinks: with a login profile that takes a
// second, a model that takes three to ask for its first bash call lends
// that time to the session's login-shell snapshot: the profile has run
// (its marker is there) by the time the call starts, instead of inside
// the call. The call still sees what the profile set.
func TestProfileRunsWhileTheModelThinks(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	home, dir, userHome := t.TempDir(), t.TempDir(), t.TempDir()
	writeFakeConfig(t, home, f.URL())
	marker := filepath.Join(userHome, "profile-ran")
	profile := "sleep 1\nexport FROM_PROFILE=yes\n: >" + marker + "\n"
	if err := os.WriteFile(filepath.Join(userHome, ".bash_profile"), []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startEnv(t, home, []string{"HOME=" + userHome}, "--approval-policy", "auto")
	initV3(p)
	p.send(&protocol.SessionStart{RequestID: "s", Cwd: dir})
	sid := nextOf[*protocol.SessionStarted](p).SessionID
	f.Enqueue(
		fo.Script(fo.Delay(3*time.Second), fo.ToolCall("c1", "bash", `{"command":"echo \"profile=$FROM_PROFILE\""}`)),
		fo.Script(fo.Text("done")),
	)
	p.send(&protocol.TurnStart{RequestID: "t", SessionID: sid, Prompt: "go"})
	nextOf[*protocol.ToolStarted](p)
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the profile had not run when the call started (%v): the snapshot was not taken while the model thought", err)
	}
	done := nextOf[*protocol.ToolCompleted](p)
	if done.Output != "exit 0\nprofile=yes\n" {
		t.Errorf("the call printed %q, want what the profile set", done.Output)
	}
	nextOf[*protocol.TurnCompleted](p)
}
