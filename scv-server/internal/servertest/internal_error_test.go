package servertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestInternalErrorOfARequest provokes internal_error on the real dispatch
// path, twice: the tools of a workspace cannot be set up (a failing
// dependency), and setting them up panics (a bug). Both answer the
// session.start with internal_error, and the connection and the server go
// on: a session in a sound workspace starts afterwards.
func TestInternalErrorOfARequest(t *testing.T) {
	t.Parallel()
	base := st.WithTools()
	s := st.Start(t, st.Options{Tools: func(ws string) (*tools.Registry, error) {
		switch filepath.Base(ws) {
		case "broken":
			return nil, errors.New("the disk is on fire")
		case "buggy":
			var reg *tools.Registry
			return reg, reg.Register(nil) // a nil dereference
		}
		return base(ws)
	}})
	c := s.Client
	c.Init(3)
	root := t.TempDir()
	for _, name := range []string{"broken", "buggy"} {
		ws := filepath.Join(root, name)
		mkdir(t, ws)
		c.Send(&protocol.SessionStart{RequestID: "s-" + name, Cwd: ws})
		e := c.ExpectError(protocol.ErrInternal)
		if e.RequestID != "s-"+name || e.Fatal {
			t.Fatalf("%s: error = %+v", name, e)
		}
		want := "the disk is on fire"
		if name == "buggy" {
			want = "the server failed unexpectedly while handling session.start"
		}
		if !strings.Contains(e.Message, want) {
			t.Fatalf("%s: message %q does not say %q", name, e.Message, want)
		}
	}
	c.StartSession(t.TempDir(), 3)
}

// panicker is a tool whose run panics.
type panicker struct{}

func (panicker) Spec() tools.Spec {
	return tools.Spec{Name: "boom", Description: "Panics.", Schema: json.RawMessage(`{"type":"object"}`)}
}

func (panicker) Prepare(tools.Env, json.RawMessage) (*tools.Plan, error) {
	return &tools.Plan{Risk: protocol.RiskReadOnly, Summary: "Boom", Run: func(context.Context) (tools.Result, error) {
		panic("the boom tool is broken")
	}}, nil
}

// TestInternalErrorOfATurn: a tool that panics fails its turn with
// turn.failed internal_error instead of killing the server; the session's
// history stays valid and the next turn runs.
func TestInternalErrorOfATurn(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{Tools: st.WithTools(panicker{})})
	sid, _ := session(t, s, 3)
	c := s.Client
	f.Enqueue(fo.Script(fo.ToolCall("call_1", "boom", `{}`)))
	c.Turn(sid, "explode")
	evs, fail := st.Until[*protocol.TurnFailed](c)
	if fail.Code != protocol.FailInternal || !strings.Contains(fail.Message, "the boom tool is broken") {
		t.Fatalf("turn.failed = %+v after %s", fail, st.Kinds(evs))
	}
	f.Enqueue(fo.Script(fo.Text("still here")))
	c.Turn(sid, "are you there?")
	st.Until[*protocol.TurnCompleted](c)
	reqs := f.Requests()
	if got := strings.Join(reqs[len(reqs)-1].Roles(), " "); got != "system user" {
		t.Fatalf("the next request's roles are %q: the failed turn left a broken history", got)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}
