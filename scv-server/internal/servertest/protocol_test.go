package servertest_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-server/internal/dialect/ndjson"
	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/testkit"
)

func TestMain(m *testing.M) {
	restore := testkit.IsolateHome()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { restore(); os.Exit(code) }))
}

func TestInitializeVersions(t *testing.T) {
	t.Parallel()
	for _, v := range []int{1, 2, 3, 4} {
		t.Run("v"+string(rune('0'+v)), func(t *testing.T) {
			s := st.Start(t, st.Options{})
			s.Client.Init(v)
		})
	}
}

func TestVersionMismatchIsFatal(t *testing.T) {
	t.Parallel()
	for _, v := range []int{0, 5, 99} {
		s := st.Start(t, st.Options{})
		s.Client.Send(&protocol.Initialize{RequestID: "1", ProtocolVersion: v})
		e := s.Client.ExpectError(protocol.ErrVersionMismatch)
		if !e.Fatal || e.RequestID != "1" || !strings.Contains(e.Message, "versions 1 to 4") {
			t.Fatalf("error = %+v", e)
		}
		if err := s.Done(); !errors.Is(err, ndjson.ErrVersionMismatch) {
			t.Fatalf("Serve = %v, want ErrVersionMismatch", err)
		}
		if !s.Client.Closed() {
			t.Fatal("output still open after a fatal error")
		}
	}
}

func TestNotInitialized(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	s.Client.Send(&protocol.SessionStart{RequestID: "7", Cwd: t.TempDir()})
	e := s.Client.ExpectError(protocol.ErrNotInitialized)
	if e.Fatal || e.RequestID != "7" {
		t.Fatalf("error = %+v", e)
	}
	s.Client.Init(3) // the connection still works
}

func TestBadFramesAreAnsweredAndServingGoesOn(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	c := s.Client
	c.Init(3)
	cases := []struct {
		line string
		code protocol.ErrorCode
		want string
	}{
		{`{not json`, protocol.ErrInvalidJSON, "not valid JSON"},
		{`[1,2]`, protocol.ErrInvalidRequest, "not an object"},
		{`"turn.start"`, protocol.ErrInvalidRequest, "not an object"},
		{`{"request_id":"1"}`, protocol.ErrInvalidRequest, "no \"type\""},
		{`{"type":"turn.start"}`, protocol.ErrInvalidRequest, "request_id"},
		{`{"type":"turn.start","request_id":5}`, protocol.ErrInvalidRequest, "request_id must be a string"},
		{`{"type":"bogus.thing","request_id":"2"}`, protocol.ErrInvalidRequest, "unknown message type"},
		{`{"type":"turn.start","request_id":"3","session_id":"x","prompt":5}`, protocol.ErrInvalidRequest, "prompt"},
		{`{"type":"initialize","request_id":"4","protocol_version":3,"client":{"name":"again"}}`, protocol.ErrInvalidRequest, "already initialized"},
		{`{"type":"turn.start","request_id":"5","session_id":"nope","prompt":"hi"}`, protocol.ErrSessionNotFound, "nope"},
		{`{"type":"session.start","request_id":"6","cwd":"relative/dir"}`, protocol.ErrInvalidRequest, "not an absolute path"},
		{`{"type":"session.start","request_id":"7"}`, protocol.ErrInvalidRequest, `"cwd"`},
	}
	for _, tc := range cases {
		c.SendRaw(tc.line)
		e := c.ExpectError(tc.code)
		if e.Fatal || !strings.Contains(e.Message, tc.want) {
			t.Errorf("%s: error = %+v, want message containing %q", tc.line, e, tc.want)
		}
	}
	// Unknown fields are ignored.
	c.SendRaw(`{"type":"session.start","request_id":"8","cwd":` + st.JSON(t.TempDir()) + `,"future_field":{"x":1}}`)
	st.Expect[*protocol.SessionStarted](c)
	st.Expect[*protocol.QueueSnapshot](c)
}

func TestOversizedFrameIsDiscarded(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	c := s.Client
	c.Init(3)
	big := `{"type":"turn.start","request_id":"9","session_id":"x","prompt":"` + strings.Repeat("a", protocol.MaxClientFrameBytes) + `"}`
	c.SendRaw(big)
	e := c.ExpectError(protocol.ErrInvalidRequest)
	if !strings.Contains(e.Message, "over the 1048576-byte limit") {
		t.Fatalf("error = %+v", e)
	}
	c.SendRaw(`{"type":"session.start","request_id":"10","cwd":` + st.JSON(t.TempDir()) + `}`)
	st.Expect[*protocol.SessionStarted](c)
}

func TestFrameAtLimitIsRead(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	c := s.Client
	c.Init(1)
	prefix := `{"type":"session.start","request_id":"s1","cwd":` + st.JSON(t.TempDir()) + `,"pad":"`
	line := prefix + strings.Repeat("x", protocol.MaxClientFrameBytes-len(prefix)-2) + `"}`
	if len(line) != protocol.MaxClientFrameBytes {
		t.Fatalf("line is %d bytes", len(line))
	}
	c.SendRaw(line)
	st.Expect[*protocol.SessionStarted](c)
}

func TestSessionStartCwd(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	c := s.Client
	c.Init(1)
	dir := t.TempDir()
	file := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	c.Send(&protocol.SessionStart{RequestID: "cwd1", Cwd: file})
	if e := c.ExpectError(protocol.ErrInvalidRequest); !strings.Contains(e.Message, "not a directory") {
		t.Fatalf("file cwd: %+v", e)
	}
	c.Send(&protocol.SessionStart{RequestID: "cwd2", Cwd: filepath.Join(dir, "missing")})
	if e := c.ExpectError(protocol.ErrInvalidRequest); !strings.Contains(e.Message, "does not exist") {
		t.Fatalf("missing cwd: %+v", e)
	}
	c.Send(&protocol.SessionStart{RequestID: "cwd3", Cwd: link + "/./"})
	started := st.Expect[*protocol.SessionStarted](c)
	real, _ := filepath.EvalSymlinks(dir)
	if started.Cwd != real {
		t.Fatalf("cwd = %q, want canonical %q", started.Cwd, real)
	}
	if started.RequestID != "cwd3" || started.SessionID == "" || started.Model != "scv-demo" ||
		started.MaxServerFrameBytes != protocol.MaxServerFrameBytes || started.MaxTranscriptBytes != 8<<20 ||
		started.MaxTranscriptItems != 10000 || started.MaxPromptHistoryBytes != 1<<20 || started.MaxPromptHistoryItems != 200 ||
		started.ContextMaxTokens <= 0 {
		t.Fatalf("session.started = %+v", started)
	}
}

func TestEOFShutsDownCleanly(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	s.Client.Init(3)
	s.CloseInput()
	if err := s.Done(); err != nil {
		t.Fatalf("Serve after EOF = %v, want nil", err)
	}
}

// TestStrictFrames: on the real dispatch path, a frame with a member given
// twice or a documented member in other letter case is refused as
// invalid_request and changes nothing; so is a request_id the connection
// already used, answered without that id. The connection goes on.
func TestStrictFrames(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	c := s.Client
	c.Init(3)
	sid := c.StartSession(t.TempDir(), 3).SessionID
	for _, tc := range []struct{ frame, reqID, want string }{
		{`{"type":"turn.start","request_id":"d1","session_id":"` + sid + `","prompt":"a","prompt":"b"}`, "d1", `the member "prompt" appears twice`},
		{`{"type":"turn.start","request_id":"d2","request_id":"d3","session_id":"` + sid + `","prompt":"a"}`, "", `the member "request_id" appears twice`},
		{`{"type":"turn.start","request_id":"d4","session_id":"` + sid + `","Prompt":"a"}`, "d4", `member names are case-sensitive; send "prompt"`},
		{`{"type":"session.clear","request_id":"d5","session_id":"` + sid + `","x":{"y":1,"y":2}}`, "d5", `the member "x.y" appears twice`},
	} {
		c.SendRaw(tc.frame)
		e := c.ExpectError(protocol.ErrInvalidRequest)
		if e.RequestID != tc.reqID || !strings.Contains(e.Message, tc.want) {
			t.Fatalf("%s: error = %+v, want request_id %q and %q", tc.frame, e, tc.reqID, tc.want)
		}
	}
	// None of them started a turn: the first real turn gets seq 2.
	c.Send(&protocol.TurnStart{RequestID: "t1", SessionID: sid, Prompt: "hello"})
	ts := st.Expect[*protocol.TurnStarted](c)
	if ts.Seq != 2 {
		t.Fatalf("turn.started = %+v, want seq 2", ts)
	}
	c.Send(&protocol.TurnCancel{RequestID: "c1", SessionID: sid, TurnID: ts.TurnID})
	st.Until[*protocol.TurnCancelled](c)

	// A message the handler refused used its request_id too; one refused
	// before it could be read as a message (d1 above) did not.
	c.Send(&protocol.TurnStart{RequestID: "e1", SessionID: sid, Prompt: ""})
	c.ExpectError(protocol.ErrInvalidRequest)
	c.Send(&protocol.SessionRules{RequestID: "d1", SessionID: sid})
	st.Expect[*protocol.RulesListed](c)

	// A repeated request_id, of a finished turn or of any other message,
	// is refused without echoing it, whatever the message.
	for _, m := range []protocol.ClientMessage{
		&protocol.TurnStart{RequestID: "t1", SessionID: sid, Prompt: "again"},
		&protocol.SessionRules{RequestID: "t1", SessionID: sid},
		&protocol.TurnStart{RequestID: "e1", SessionID: sid, Prompt: "now with a prompt"},
		&protocol.SessionRules{RequestID: "d1", SessionID: sid},
	} {
		c.Send(m)
		e := c.ExpectError(protocol.ErrInvalidRequest)
		if e.RequestID != "" || !strings.Contains(e.Message, "was already used on this connection") {
			t.Fatalf("%s: error = %+v", m.Kind(), e)
		}
	}
	// A fresh id works.
	c.Send(&protocol.SessionRules{RequestID: "r1", SessionID: sid})
	st.Expect[*protocol.RulesListed](c)
}
