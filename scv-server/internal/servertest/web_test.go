package servertest_test

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/netguard"
	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// page serves one HTML page and returns its URL and a policy that treats
// just that server as public; for a TLS server, also the pool that trusts
// its certificate.
func page(t *testing.T, tls bool) (string, *netguard.Policy, *x509.CertPool) {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<html><body><nav>menu</nav><h1>Release notes</h1><p>Version 2 is out.</p></body></html>")
	})
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // a refused handshake is expected in some tests
	var pool *x509.CertPool
	if tls {
		srv.StartTLS()
		pool = x509.NewCertPool()
		pool.AddCert(srv.Certificate())
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	ap := netip.MustParseAddrPort(u.Host)
	return srv.URL + "/notes?v=2", &netguard.Policy{Exceptions: []netip.AddrPort{ap}}, pool
}

func fetchCall(u string) fo.Step {
	b, _ := json.Marshal(map[string]string{"url": u})
	return fo.ToolCall("call_1", "web_fetch", string(b))
}

// TestWebFetchAsksWithTheFullURL: a fetch outside the allowlist has network
// risk, and its approval shows the whole URL; approved, the page comes back
// as text.
func TestWebFetchAsksWithTheFullURL(t *testing.T) {
	t.Parallel()
	u, policy, _ := page(t, false)
	f, s := fake(t, "", st.Options{WebPolicy: policy})
	sid, _ := session(t, s, 3)
	c := s.Client
	f.Enqueue(fo.Script(fetchCall(u)), fo.Script(fo.Text("done")))
	c.Turn(sid, "read the notes")
	_, ar := st.Until[*protocol.ApprovalRequested](c)
	if ar.Risk != protocol.RiskNetwork || !strings.Contains(ar.Summary, u) {
		t.Fatalf("approval.requested = %+v, want network risk and the full URL %s", ar, u)
	}
	c.Send(&protocol.ApprovalResolve{RequestID: c.ID(), SessionID: sid, ApprovalID: ar.ApprovalID, Approved: true})
	_, done := st.Until[*protocol.ToolCompleted](c)
	if !done.Success || !strings.Contains(done.Output, "Release notes") || !strings.Contains(done.Output, "Version 2 is out.") || strings.Contains(done.Output, "menu") {
		t.Fatalf("tool.completed = %+v", done)
	}
	st.Until[*protocol.TurnCompleted](c)
}

// TestWebFetchAllowlistRunsUnasked: an HTTPS URL on an auto-approved host
// is read-only, so on-risk runs it without asking, and the page really is
// fetched (the server trusts the test certificate). Without the allowlist
// the same URL asks first.
func TestWebFetchAllowlistRunsUnasked(t *testing.T) {
	t.Parallel()
	u, policy, pool := page(t, true)
	for _, listed := range []bool{true, false} {
		cfg := ""
		if listed {
			cfg = "\n[web]\nauto_approve_domains = [\"127.0.0.1\"]\n"
		}
		f, s := fake(t, cfg, st.Options{WebPolicy: policy, WebRootCAs: pool})
		sid, _ := session(t, s, 3)
		c := s.Client
		f.Enqueue(fo.Script(fetchCall(u)), fo.Script(fo.Text("done")))
		c.Turn(sid, "read the notes")
		if !listed {
			_, ar := st.Until[*protocol.ApprovalRequested](c)
			if ar.Risk != protocol.RiskNetwork {
				t.Fatalf("approval.requested = %+v", ar)
			}
			c.Send(&protocol.ApprovalResolve{RequestID: c.ID(), SessionID: sid, ApprovalID: ar.ApprovalID, Approved: false})
			st.Until[*protocol.TurnCompleted](c)
			continue
		}
		evs, done := st.Until[*protocol.ToolCompleted](c)
		for _, e := range evs {
			if _, ok := e.(*protocol.ApprovalRequested); ok {
				t.Fatalf("an allowlisted HTTPS fetch asked for approval: %+v", e)
			}
		}
		if done.Name != "web_fetch" || !done.Success || !strings.Contains(done.Output, "Version 2 is out.") || !strings.Contains(done.Output, "# Release notes") {
			t.Fatalf("tool.completed = %+v, want the page fetched", done)
		}
		st.Until[*protocol.TurnCompleted](c)
	}
}

// TestWebFetchRefusesLoopbackByDefault: without the test policy the real
// address policy refuses the loopback server before anything is asked.
func TestWebFetchRefusesLoopbackByDefault(t *testing.T) {
	t.Parallel()
	u, _, _ := page(t, false)
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 3)
	c := s.Client
	f.Enqueue(fo.Script(fetchCall(u)), fo.Script(fo.Text("done")))
	c.Turn(sid, "read the notes")
	evs, done := st.Until[*protocol.ToolCompleted](c)
	for _, e := range evs {
		if _, ok := e.(*protocol.ApprovalRequested); ok {
			t.Fatalf("a refused address was put to the user: %+v", e)
		}
	}
	if done.Success || !strings.Contains(done.Output, "127.0.0.1") || !strings.Contains(done.Output, "public address") {
		t.Fatalf("tool.completed = %+v, want a refusal naming the address", done)
	}
	st.Until[*protocol.TurnCompleted](c)
}

// TestHostedSearchOnTheResponsesWire: web.search = "provider" offers the
// hosted tool with each request, and cited URLs the answer does not link
// are listed under Sources.
func TestHostedSearchOnTheResponsesWire(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "wire_api = \"responses\"\n\n[web]\nsearch = \"provider\"\n", st.Options{})
	sid, _ := session(t, s, 3)
	c := s.Client
	f.Enqueue(fo.Script(fo.WebSearch("tokio latest"), fo.Text("Tokio 1.50 is the latest."), fo.Citation("https://crates.io/crates/tokio", "tokio on crates.io")))
	c.Turn(sid, "latest tokio?")
	_, done := st.Until[*protocol.AssistantCompleted](c)
	if !strings.Contains(done.Content, "Sources:") || !strings.Contains(done.Content, "https://crates.io/crates/tokio") {
		t.Fatalf("assistant.completed = %q, want a Sources list with the cited URL", done.Content)
	}
	st.Until[*protocol.TurnCompleted](c)
	reqs := f.Requests()
	if len(reqs) != 1 || reqs[0].Wire != "responses" {
		t.Fatalf("requests = %+v", reqs)
	}
	hosted := false
	for _, tl := range reqs[0].Tools {
		if tl.Type == "web_search" {
			hosted = true
		}
	}
	if !hosted {
		t.Fatalf("the request offers no hosted web_search tool: %+v", reqs[0].Tools)
	}
}

// TestToolFreeSessionsGetNoWebTools: neither web tool nor hosted search
// for a session started with tools off.
func TestToolFreeSessionsGetNoWebTools(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "wire_api = \"responses\"\n\n[web]\nsearch = \"provider\"\n", st.Options{})
	c := s.Client
	c.Init(3)
	off := false
	c.Send(&protocol.SessionStart{RequestID: c.ID(), Cwd: t.TempDir(), Tools: &off})
	started := st.Expect[*protocol.SessionStarted](c)
	st.Expect[*protocol.QueueSnapshot](c)
	f.Enqueue(fo.Script(fo.Text("hi")))
	c.Turn(started.SessionID, "hello")
	st.Until[*protocol.TurnCompleted](c)
	if tl := f.Requests()[0].Tools; len(tl) != 0 {
		t.Fatalf("a tool-free session offered tools: %+v", tl)
	}
}

// TestWebSearchThroughSearXNG: web.search = "searxng" registers web_search,
// which runs without approval and returns the service's results.
func TestWebSearchThroughSearXNG(t *testing.T) {
	t.Parallel()
	var got url.Values
	searx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Query()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"results":[{"title":"tokio - crates.io","url":"https://crates.io/crates/tokio","content":"An event-driven, non-blocking I/O platform."}]}`)
	}))
	t.Cleanup(searx.Close)
	f, s := fake(t, fmt.Sprintf("\n[web]\nsearch = \"searxng\"\nsearxng_url = %q\n", searx.URL), st.Options{})
	sid, _ := session(t, s, 3)
	c := s.Client
	f.Enqueue(fo.Script(fo.ToolCall("call_1", "web_search", `{"query":"tokio latest version","count":3}`)), fo.Script(fo.Text("done")))
	c.Turn(sid, "search")
	evs, done := st.Until[*protocol.ToolCompleted](c)
	for _, e := range evs {
		if _, ok := e.(*protocol.ApprovalRequested); ok {
			t.Fatalf("web_search asked for approval: %+v", e)
		}
	}
	if !done.Success || !strings.Contains(done.Output, "https://crates.io/crates/tokio") || !strings.Contains(done.Output, "non-blocking") {
		t.Fatalf("tool.completed = %+v", done)
	}
	if got.Get("q") != "tokio latest version" || got.Get("format") != "json" {
		t.Fatalf("SearXNG query = %v", got)
	}
	st.Until[*protocol.TurnCompleted](c)
}

// TestWebFetchPortPolicy: web_fetch refuses a URL on a port outside
// web.allowed_ports before anything is asked, and the setting replaces
// the default ports (80, 443, 8000-8999). The URLs are refused before any
// connection, so no test touches the network.
func TestWebFetchPortPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ config, url, port, allowed string }{
		{"", "http://93.184.216.34:25/", "25", "80, 443 and 8000-8999"},
		{"\n[web]\nallowed_ports = [\"443\", \"3000-3999\"]\n", "http://93.184.216.34:8080/", "8080", "443 and 3000-3999"},
	} {
		f, s := fake(t, tc.config, st.Options{})
		sid, _ := session(t, s, 3)
		c := s.Client
		f.Enqueue(fo.Script(fetchCall(tc.url)), fo.Script(fo.Text("done")))
		c.Turn(sid, "fetch it")
		evs, done := st.Until[*protocol.ToolCompleted](c)
		for _, e := range evs {
			if _, ok := e.(*protocol.ApprovalRequested); ok {
				t.Fatalf("a refused port was put to the user: %+v", e)
			}
		}
		want := "port " + tc.port + " is not one of the allowed ports (" + tc.allowed + ")"
		if done.Success || !strings.Contains(done.Output, want) || !strings.Contains(done.Output, "web.allowed_ports") {
			t.Fatalf("tool.completed = %+v, want %q", done, want)
		}
		st.Until[*protocol.TurnCompleted](c)
	}
}
