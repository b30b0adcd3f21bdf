package main_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestKilledMidWriteLeavesNoTempFile kills the real server with SIGKILL
// while its write tool replaces a large file, sixteen times at random
// moments after tool.started: the file always holds one complete content
// and no temporary file is ever left in the workspace (issue 14, item 17).
func TestKilledMidWriteLeavesNoTempFile(t *testing.T) {
	if testing.Short() {
		t.Skip("kills servers")
	}
	home := t.TempDir()
	config := func(url string) string {
		return fmt.Sprintf(`[provider]
active = "fake"

[providers.fake]
kind = "openai"
base_url = %q
api_key = "sk-test"
model = "fake-model"
max_retries = 0

[tools]
approval_policy = "auto"
`, url)
	}
	ws := t.TempDir()
	// Below the provider's 256 KiB bound on one tool call's arguments.
	const size = 200 << 10
	target := filepath.Join(ws, "big.txt")
	if err := os.WriteFile(target, []byte(strings.Repeat("A", size)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 17))
	for i := range 16 {
		letter := string(rune('B' + i))
		args := fmt.Sprintf(`{"path":"big.txt","mode":"replace","content":%q}`, strings.Repeat(letter, size))
		// A fake of its own per server: a killed turn leaves its
		// unused replies behind.
		f := fo.Start(t)
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config(f.URL())), 0o600); err != nil {
			t.Fatal(err)
		}
		f.Enqueue(fo.Script(fo.ToolCall("w", "write", args)), fo.Script(fo.Text("done")))
		p := start(t, home)
		initV3(p)
		p.send(&protocol.SessionStart{RequestID: "s", Cwd: ws})
		sid := nextOf[*protocol.SessionStarted](p).SessionID
		nextOf[*protocol.QueueSnapshot](p)
		p.send(&protocol.TurnStart{RequestID: "t", SessionID: sid, Prompt: "rewrite it"})
		for {
			ev := p.next()
			if _, ok := ev.(*protocol.ToolStarted); ok {
				break
			}
			if f, ok := ev.(*protocol.TurnFailed); ok {
				t.Fatalf("turn failed: %s", f.Message)
			}
		}
		time.Sleep(time.Duration(r.IntN(3_000)) * time.Microsecond)
		kill(t, p)
		got, err := os.ReadFile(target)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != size || strings.Count(string(got), string(got[:1])) != size {
			t.Fatalf("after kill %d the file has %d bytes starting %q: not one complete content", i, len(got), got[:1])
		}
		entries, err := os.ReadDir(ws)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() != "big.txt" {
				t.Fatalf("after kill %d the workspace holds %s", i, e.Name())
			}
		}
	}
}
