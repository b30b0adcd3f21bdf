package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestPausedClientKeepsItsTurn: the real server over real pipes, with a
// client that stops reading its stdout for 5 seconds (a paused terminal)
// while the model streams a 3 MB reply whose request has a 3-second
// deadline. The server neither ends the connection (it used to after 3 s,
// and exit 1) nor stalls the provider's stream: once the client reads
// again the whole reply arrives, the turn completes, and the server exits
// 0 at end of input.
func TestPausedClientKeepsItsTurn(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	home := t.TempDir()
	writeFakeConfig(t, home, f.URL())
	cfg, err := os.OpenFile(filepath.Join(home, "config.toml"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(cfg, "timeout_seconds = 3")
	cfg.Close()
	const chunks = 20000
	f.Enqueue(fo.Script(fo.Repeat(chunks, "words go by "), fo.Usage(10, 10)))

	p := start(t, home)
	initV3(p)
	p.send(&protocol.SessionStart{RequestID: "s", Cwd: t.TempDir()})
	sid := nextOf[*protocol.SessionStarted](p).SessionID
	nextOf[*protocol.QueueSnapshot](p)
	p.send(&protocol.TurnStart{RequestID: "t", SessionID: sid, Prompt: "talk"})
	time.Sleep(5 * time.Second) // not reading

	var text strings.Builder
	deltas := 0
	for {
		switch ev := p.next().(type) {
		case *protocol.AssistantDelta:
			text.WriteString(ev.Content)
			deltas++
			continue
		case *protocol.TurnCompleted:
		case *protocol.TurnFailed:
			t.Fatalf("the turn failed while the client was paused: %+v", ev)
		default:
			continue
		}
		break
	}
	if want := strings.Repeat("words go by ", chunks); text.String() != want {
		t.Fatalf("got %d bytes of text, want %d", text.Len(), len(want))
	}
	t.Logf("%d chunks in %d assistant.delta frames", chunks, deltas)
	if code := p.exit(); code != 0 {
		t.Fatalf("exit code %d, want 0; stderr: %s", code, p.stderr.String())
	}
}
