package servertest_test

import (
	"fmt"
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

// TestSessionModelAcrossProviders: session.models lists every configured
// provider's models, the session's first, each with its provider, context
// window and price, and a provider whose key is not set as unavailable,
// naming the variable; session.set_model refuses that provider with a
// message naming the variable and leaves the session where it was, and
// switches to another provider's model, which the next request goes to.
func TestSessionModelAcrossProviders(t *testing.T) {
	t.Parallel()
	first, second := fo.Start(t), fo.Start(t)
	second.SetModels("s-big", "s-small")
	cfg := first.Config("") + `
[providers.fake.models."fake-model"]
input_price = 2
output_price = 8

[providers.nokey]
base_url = "http://127.0.0.1:9/v1"
api_key_env = "SCV_TEST_MISSING_KEY"
model = "lonely"

[providers.second]
base_url = "` + second.URL() + `"
api_key_env = "SCV_TEST_SECOND_KEY"
model = "s-big"
context_max_tokens = 64000
max_retries = 0

[providers.second.models.s-small]
context_max_tokens = 32000
input_price = 0.5
output_price = 1.5
`
	a := st.Start(t, st.Options{Config: cfg, Env: map[string]string{"SCV_TEST_SECOND_KEY": "sk-second"}})
	c := a.Client
	c.Init(protocol.Version4)
	started := c.StartSession(t.TempDir(), protocol.Version4)
	sid := started.SessionID
	if started.Provider != "fake" || started.Price == nil || started.Price.InputPerMTok != 2 || started.Price.OutputPerMTok != 8 {
		t.Fatalf("session.started provider %q price %+v, want fake at 2/8", started.Provider, started.Price)
	}

	c.Send(&protocol.SessionModels{RequestID: c.ID(), SessionID: sid})
	got := st.Expect[*protocol.SessionModel](c)
	var rows []string
	for _, m := range got.Models {
		row := fmt.Sprintf("%s/%s %d", m.Provider, m.ID, m.ContextMaxTokens)
		if m.Price != nil {
			row += fmt.Sprintf(" $%g/$%g", m.Price.InputPerMTok, m.Price.OutputPerMTok)
		}
		if m.Unavailable != "" {
			row += " (" + m.Unavailable + ")"
		}
		rows = append(rows, row)
	}
	want := []string{
		"fake/fake-model 128000 $2/$8",
		"nokey/lonely 128000 (SCV_TEST_MISSING_KEY is not set)",
		"second/s-big 64000",
		"second/s-small 32000 $0.5/$1.5",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("session.model lists\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}

	c.Send(&protocol.SetModel{RequestID: c.ID(), SessionID: sid, Provider: "nokey", Model: "lonely"})
	if e := st.Expect[*protocol.Error](c); e.Code != protocol.ErrInvalidRequest || !strings.Contains(e.Message, "SCV_TEST_MISSING_KEY") {
		t.Fatalf("a provider without its key: %+v, want invalid_request naming SCV_TEST_MISSING_KEY", e)
	}
	c.Send(&protocol.SetModel{RequestID: c.ID(), SessionID: sid, Provider: "second", Model: "lonely"})
	if e := st.Expect[*protocol.Error](c); !strings.Contains(e.Message, `unknown model "lonely" of provider "second"`) {
		t.Fatalf("a model of another provider: %+v", e)
	}
	c.Send(&protocol.SetModel{RequestID: c.ID(), SessionID: sid, Provider: "second", Model: "s-small"})
	sw := st.Expect[*protocol.SessionModel](c)
	if sw.Provider != "second" || sw.Model != "s-small" || sw.ContextMaxTokens != 32000 || sw.Price == nil || sw.Price.OutputPerMTok != 1.5 {
		t.Fatalf("after the switch: %+v (price %+v)", sw, sw.Price)
	}

	second.Enqueue(fo.Script(fo.Text("from the second provider")))
	c.Turn(sid, "hello")
	st.Until[*protocol.TurnCompleted](c)
	if reqs := second.Requests(); len(reqs) != 1 || reqs[0].Model != "s-small" {
		t.Fatalf("second provider's requests %+v, want one for s-small", reqs)
	}
	if reqs := first.Requests(); len(reqs) != 0 {
		t.Fatalf("the first provider got %d requests after the switch", len(reqs))
	}
}
