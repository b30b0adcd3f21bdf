package exec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/scv-cli/scv/shared/protocol"
)

// fakeServerEnv names the scenario the test binary plays when it is started
// as scv-server. Behaviour tests point ServerPath at the test binary itself,
// so every protocol path of exec is exercised over real pipes and a real
// child process without depending on scv-server (the e2e tests in the
// module root run the real one).
const fakeServerEnv = "SCV_EXEC_TEST_SERVER"

// fakeServer plays scenario on stdin/stdout and returns its exit code.
func fakeServer(scenario string) int {
	s := &fake{fr: protocol.NewFrameReader(os.Stdin, protocol.MaxClientFrameBytes), scenario: scenario}
	if err := s.serve(); err != nil {
		fmt.Fprintf(os.Stderr, "fake server: %v\n", err)
		return 1
	}
	return 0
}

type fake struct {
	fr       *protocol.FrameReader
	scenario string
	seq      uint64
	turn     protocol.TurnHeader
	cwd      string
	resume   string
}

func (s *fake) emit(evs ...protocol.Event) {
	for _, e := range evs {
		if sq, ok := e.(protocol.Sequenced); ok {
			s.seq++
			sq.SetSeq(s.seq)
		}
		b, err := protocol.EncodeEvent(e)
		if err != nil {
			panic(err)
		}
		os.Stdout.Write(append(b, '\n'))
	}
}

func (s *fake) raw(line string) { os.Stdout.WriteString(line + "\n") }

// next reads the next client message; io.EOF when stdin closes.
func (s *fake) next() (protocol.ClientMessage, error) {
	line, err := s.fr.Next()
	if err != nil {
		return nil, err
	}
	return protocol.DecodeClientMessage(line)
}

func (s *fake) h() protocol.TurnHeader { return s.turn }

func (s *fake) delta(text string) *protocol.AssistantDelta {
	return &protocol.AssistantDelta{TurnHeader: s.h(), Content: text}
}

func (s *fake) serve() error {
	for {
		m, err := s.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch m := m.(type) {
		case *protocol.Initialize:
			if m.ProtocolVersion != protocol.Version4 || m.Client.Name != ClientName || m.Client.Version == "" {
				s.emit(&protocol.Error{RequestID: m.RequestID, Code: protocol.ErrVersionMismatch, Message: fmt.Sprintf("bad initialize %+v", m), Fatal: true})
				os.Exit(3)
			}
			s.emit(&protocol.Initialized{RequestID: m.RequestID, ProtocolVersion: m.ProtocolVersion, Server: protocol.ServerInfo{Name: "fake", Version: "0"}})
		case *protocol.SessionStart:
			if s.scenario == "refuse-session" || !filepath.IsAbs(m.Cwd) {
				s.emit(&protocol.Error{RequestID: m.RequestID, Code: protocol.ErrInvalidRequest, Message: "cwd is not a directory"})
				continue
			}
			s.cwd = m.Cwd
			if m.Resume != "" {
				// A resumed session: its transcript follows, which a text
				// run must not print.
				s.resume = m.Resume
				s.emit(&protocol.SessionStarted{RequestID: m.RequestID, SessionID: "s1", Cwd: m.Cwd, Model: "fake", Resumed: true, Usage: &protocol.Usage{InputTokens: 5}},
					&protocol.SessionReplay{RequestID: m.RequestID, SessionID: "s1", Items: []protocol.ReplayItem{{Kind: "user", Text: "OLD PROMPT"}}},
					&protocol.SessionReplay{RequestID: m.RequestID, SessionID: "s1", Items: []protocol.ReplayItem{{Kind: "assistant", Text: "OLD REPLY"}}, Done: true})
				continue
			}
			s.emit(&protocol.SessionStarted{RequestID: m.RequestID, SessionID: "s1", Cwd: m.Cwd, Model: "fake"})
		case *protocol.SessionList:
			var sessions []protocol.SessionSummary
			if s.scenario == "continue" && m.Cwd == filepath.Clean(m.Cwd) && m.Limit == 1 {
				sessions = append(sessions, protocol.SessionSummary{SessionID: "s0", Cwd: m.Cwd, Title: "the old task",
					CreatedAt: "2026-12-01T08:00:00Z", UpdatedAt: "2026-12-01T08:05:00Z", Turns: 2, Bytes: 100})
			}
			s.emit(&protocol.SessionListed{RequestID: m.RequestID, Sessions: append([]protocol.SessionSummary{}, sessions...)})
		case *protocol.TurnStart:
			s.turn = protocol.TurnHeader{RequestID: m.RequestID, SessionID: m.SessionID, TurnID: "t1"}
			s.emit(&protocol.TurnStarted{TurnHeader: s.h()})
			if err := s.play(m); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected %s", m.Kind())
		}
	}
}

func (s *fake) completeText(text ...string) {
	for _, t := range text {
		s.emit(s.delta(t))
	}
	s.emit(&protocol.AssistantCompleted{TurnHeader: s.h(), Content: strings.Join(text, "")},
		&protocol.TurnCompleted{TurnHeader: s.h(), Steps: 1})
}

// waitFor reads client messages until one of type kind arrives.
func (s *fake) waitFor(kind string) (protocol.ClientMessage, error) {
	for {
		m, err := s.next()
		if err != nil {
			return nil, fmt.Errorf("waiting for %s: %w", kind, err)
		}
		if m.Kind() == kind {
			return m, nil
		}
	}
}

func (s *fake) play(m *protocol.TurnStart) error {
	switch s.scenario {
	case "text":
		s.completeText("Hello, ", "world")
	case "newline-reply":
		s.completeText("line one\n", "line two\n")
	case "echo":
		s.completeText(fmt.Sprintf("prompt=%q args=%q cwd=%s", m.Prompt, os.Args[1:], s.cwd))
	case "continue", "continue-none":
		s.completeText(fmt.Sprintf("resume=%q prompt=%q", s.resume, m.Prompt))
	case "unstreamed":
		s.emit(&protocol.AssistantCompleted{TurnHeader: s.h(), Content: "all at once"},
			&protocol.TurnCompleted{TurnHeader: s.h(), Steps: 1})
	case "tools":
		s.emit(s.delta("Let me look."),
			&protocol.AssistantCompleted{TurnHeader: s.h(), Content: "Let me look."},
			&protocol.ToolProposed{TurnHeader: s.h(), CallID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"src/main.go"}`)},
			&protocol.ToolStarted{TurnHeader: s.h(), CallID: "c1", Name: "read"},
			&protocol.ToolCompleted{TurnHeader: s.h(), CallID: "c1", Name: "read", Success: true, Output: "package main"},
			&protocol.ToolProposed{TurnHeader: s.h(), CallID: "c2", Name: "bash", Arguments: json.RawMessage(`{"command":"go test\n  ./..."}`)},
			&protocol.ToolCompleted{TurnHeader: s.h(), CallID: "c2", Name: "bash", Output: "\nexit status 1\nFAIL"},
		)
		s.completeText("Done.")
	case "long":
		// 2,000 lines in deltas that split lines (as a model's tokens
		// do), then a tool call: the reply must reach stdout whole and
		// before the tool's line on stderr.
		reply := longReply()
		for i := 0; i < len(reply); i += 7 {
			s.emit(s.delta(reply[i:min(i+7, len(reply))]))
		}
		s.emit(&protocol.AssistantCompleted{TurnHeader: s.h(), Content: reply},
			&protocol.ToolProposed{TurnHeader: s.h(), CallID: "c1", Name: "bash", Arguments: json.RawMessage(`{"command":"true"}`)},
			&protocol.ToolCompleted{TurnHeader: s.h(), CallID: "c1", Name: "bash", Success: true})
		s.completeText("end")
	case "fail":
		s.emit(s.delta("partial"),
			&protocol.TurnFailed{TurnHeader: s.h(), Code: protocol.FailProviderError, Message: "upstream said no"})
	case "crash":
		s.emit(s.delta("partial"))
		os.Exit(3)
	case "unknown-event":
		s.raw(`{"type":"future.event","session_id":"s1","x":1}`)
		s.completeText("still fine")
	case "malformed":
		s.raw(`{"type":"assistant.delta","session_id":"s1","turn_id":"t1","seq":"not a number","content":"x"}`)
		s.completeText("never read")
	case "malformed-flood":
		// More than a pipe holds after the bad frame: exec must keep
		// draining or this write blocks and the server cannot exit.
		s.raw(`{"type":"assistant.delta","session_id":"s1","turn_id":"t1","seq":"not a number","content":"x"}`)
		for range 2000 {
			s.emit(s.delta(strings.Repeat("x", 100)))
		}
		s.completeText("never read")
	case "background":
		// A turn the server started on its own ends first; it is not ours.
		other := protocol.TurnHeader{SessionID: "s1", TurnID: "bg"}
		s.emit(&protocol.TurnStarted{TurnHeader: other, Origin: &protocol.Origin{Kind: "background"}},
			&protocol.AssistantDelta{TurnHeader: other, Content: "not mine"},
			&protocol.TurnCompleted{TurnHeader: other, Origin: &protocol.Origin{Kind: "background"}})
		s.completeText("mine")
	case "approval", "approval-late-error":
		s.emit(&protocol.ToolProposed{TurnHeader: s.h(), CallID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":".env"}`)},
			&protocol.ApprovalRequested{TurnHeader: s.h(), ApprovalID: "a1", CallID: "c1", Name: "read", Risk: protocol.RiskFilesystem, Cwd: s.cwd, Summary: "Read .env"})
		m, err := s.waitFor(protocol.TypeApprovalResolve)
		if err != nil {
			return err
		}
		res := m.(*protocol.ApprovalResolve)
		if res.ApprovalID != "a1" || res.SessionID != "s1" {
			return fmt.Errorf("bad resolve %+v", res)
		}
		if s.scenario == "approval-late-error" {
			s.emit(&protocol.Error{RequestID: res.RequestID, Code: protocol.ErrApprovalNotFound, Message: "approval a1 is already resolved"})
		}
		if res.Approved {
			s.emit(&protocol.ToolCompleted{TurnHeader: s.h(), CallID: "c1", Name: "read", Success: true, Output: "SECRET=1"})
			s.completeText("approved")
		} else {
			s.emit(&protocol.ToolCompleted{TurnHeader: s.h(), CallID: "c1", Name: "read", Output: "denied by the user"})
			s.completeText("denied")
		}
	case "cancel":
		s.emit(s.delta("working"))
		m, err := s.waitFor(protocol.TypeTurnCancel)
		if err != nil {
			return err
		}
		if c := m.(*protocol.TurnCancel); c.TurnID != "t1" || c.SessionID != "s1" {
			return fmt.Errorf("bad cancel %+v", c)
		}
		s.emit(&protocol.TurnCancelled{TurnHeader: s.h()})
	case "ignore-cancel":
		s.emit(s.delta("working"))
		if _, err := s.waitFor(protocol.TypeTurnCancel); err != nil {
			return err
		}
		time.Sleep(time.Minute)
	case "linger":
		// Completes, then ignores the EOF on stdin.
		s.completeText("bye")
		time.Sleep(time.Minute)
	default:
		return fmt.Errorf("unknown scenario %q", s.scenario)
	}
	return nil
}

// longReply is the "long" scenario's reply: 2,000 numbered lines.
func longReply() string {
	var b strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&b, "line %d of the long reply\n", i)
	}
	return b.String()
}
