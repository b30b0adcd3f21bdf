package app

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/scv-cli/scv/shared/protocol"
)

// TestRealProgram runs the model under a real tea.Program (no terminal:
// input and output are buffers), feeds it the handshake and a turn through
// Program.Send as the wire layer does, and quits with Ctrl+C twice.
func TestRealProgram(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var sent []protocol.ClientMessage
	got := make(chan protocol.ClientMessage, 16)
	m := New(Options{
		Send: func(msg protocol.ClientMessage) error {
			mu.Lock()
			sent = append(sent, msg)
			mu.Unlock()
			got <- msg
			return nil
		},
		Workspace: ws,
	})
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(strings.NewReader("")), tea.WithOutput(&out), tea.WithWindowSize(80, 24))
	done := make(chan error, 1)
	go func() {
		_, err := p.Run()
		done <- err
	}()
	wait := func() protocol.ClientMessage {
		t.Helper()
		select {
		case msg := <-got:
			return msg
		case <-ctx.Done():
			t.Fatal("timed out waiting for a message to the server")
			return nil
		}
	}
	decode := func(frame string) tea.Msg {
		e, err := protocol.DecodeEvent([]byte(frame))
		if err != nil {
			t.Fatal(err)
		}
		return ServerEvent{Event: e}
	}
	p.Send(ServerStarted{})
	ini := wait().(*protocol.Initialize)
	p.Send(decode(`{"type":"initialized","request_id":"` + ini.RequestID + `","protocol_version":4,"server":{"name":"scv-server","version":"0.1.0"}}`))
	ss := wait().(*protocol.SessionStart)
	p.Send(decode(`{"type":"session.started","request_id":"` + ss.RequestID + `","session_id":"` + sid + `","cwd":"` + ws + `","model":"scv-demo","context_max_tokens":32000,"max_server_frame_bytes":8388608,"max_transcript_bytes":8388608,"max_transcript_items":10000,"max_prompt_history_bytes":1048576,"max_prompt_history_items":200}`))
	p.Send(decode(`{"type":"queue.snapshot","request_id":"` + ss.RequestID + `","session_id":"` + sid + `","seq":1,"entries":[]}`))
	for _, r := range "hello" {
		p.Send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	p.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	ts := wait().(*protocol.TurnStart)
	if ts.Prompt != "hello" || ts.SessionID != sid {
		t.Errorf("turn.start = %+v", ts)
	}
	p.Send(decode(`{"type":"turn.started","request_id":"` + ts.RequestID + `","session_id":"` + sid + `","turn_id":"` + tid + `","seq":2}`))
	p.Send(decode(`{"type":"assistant.delta","request_id":"` + ts.RequestID + `","session_id":"` + sid + `","turn_id":"` + tid + `","seq":3,"content":"hi there"}`))
	p.Send(decode(`{"type":"turn.completed","request_id":"` + ts.RequestID + `","session_id":"` + sid + `","turn_id":"` + tid + `","seq":4,"steps":1}`))
	p.Send(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
	p.Send(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("program ended with %v", err)
		}
	case <-ctx.Done():
		p.Kill()
		<-done
		t.Fatal("Ctrl+C twice did not end the program")
	}
	if !strings.Contains(out.String(), "hello") {
		t.Error("the prompt never reached the screen")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 3 {
		t.Errorf("sent %d messages, want initialize, session.start, turn.start", len(sent))
	}
}
