package servertest_test

import (
	"strings"
	"testing"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestSessionModelSwitch: session.models lists the configured model first
// and then the provider's, with the context window; session.set_model
// refuses a model not listed and switches to a listed one, which the next
// model request uses.
func TestSessionModelSwitch(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	f.SetModels("big-model", "fake-model", "small-model")
	a := st.Start(t, st.Options{Config: st.FakeProviderConfigWithContext(f.URL(), 64000, "")})
	c := a.Client
	c.Init(protocol.Version4)
	sid := c.StartSession(t.TempDir(), protocol.Version4).SessionID

	c.Send(&protocol.SessionModels{RequestID: c.ID(), SessionID: sid})
	got := st.Expect[*protocol.SessionModel](c)
	var ids []string
	for _, m := range got.Models {
		ids = append(ids, m.ID)
		if m.ContextMaxTokens != 64000 {
			t.Errorf("model %s context = %d, want 64000", m.ID, m.ContextMaxTokens)
		}
	}
	if got.Model != "fake-model" || got.ContextMaxTokens != 64000 || strings.Join(ids, ",") != "fake-model,big-model,small-model" {
		t.Fatalf("session.model = %+v (ids %v)", got, ids)
	}

	c.Send(&protocol.SetModel{RequestID: c.ID(), SessionID: sid, Model: "nope"})
	if e := st.Expect[*protocol.Error](c); e.Code != protocol.ErrInvalidRequest || !strings.Contains(e.Message, `unknown model "nope"`) {
		t.Fatalf("an unknown model: %+v", e)
	}
	c.Send(&protocol.SetModel{RequestID: c.ID(), SessionID: sid, Model: "small-model"})
	if got := st.Expect[*protocol.SessionModel](c); got.Model != "small-model" {
		t.Fatalf("after the switch: %+v", got)
	}
	f.Enqueue(fo.Script(fo.Text("hi")))
	c.Turn(sid, "hello")
	st.Until[*protocol.TurnCompleted](c)
	reqs := f.Requests()
	if len(reqs) != 1 || reqs[0].Model != "small-model" {
		t.Fatalf("model requests %+v, want one for small-model", reqs)
	}
}

// TestSessionModelWithoutList: a provider that lists no models leaves the
// configured model as the only choice.
func TestSessionModelWithoutList(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	a := st.Start(t, st.Options{Config: st.FakeProviderConfig(f.URL(), "")})
	c := a.Client
	c.Init(protocol.Version4)
	sid := c.StartSession(t.TempDir(), protocol.Version4).SessionID
	c.Send(&protocol.SessionModels{RequestID: c.ID(), SessionID: sid})
	if got := st.Expect[*protocol.SessionModel](c); len(got.Models) != 1 || got.Models[0].ID != "fake-model" {
		t.Fatalf("session.model = %+v, want the configured model only", got)
	}
	c.Send(&protocol.SetModel{RequestID: c.ID(), SessionID: sid, Model: "other"})
	st.Expect[*protocol.Error](c)
}
