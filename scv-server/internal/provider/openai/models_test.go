package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/provider"
)

func TestListModels(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, func(c *Config) { c.Headers = map[string]string{"X-Org": "org-1"} })
	fx.srv.SetModels("gpt-b", "gpt-a", "gpt-b", "")
	ids, err := fx.p.ListModels(context.Background())
	if err != nil || !slices.Equal(ids, []string{"gpt-a", "gpt-b"}) {
		t.Fatalf("ListModels = %q, %v; want sorted, without duplicates or empty ids", ids, err)
	}
	// Cached: the second call asks nothing, and the caller's copy is its own.
	ids[0] = "changed"
	again, err := fx.p.ListModels(context.Background())
	if err != nil || !slices.Equal(again, []string{"gpt-a", "gpt-b"}) {
		t.Fatalf("second ListModels = %q, %v", again, err)
	}
	reqs := fx.srv.ModelRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d listing requests, want 1 (cached)", len(reqs))
	}
	h := reqs[0].Header
	if reqs[0].Method != http.MethodGet || h.Get("Authorization") != "Bearer "+testKey || h.Get("X-Org") != "org-1" || h.Get("User-Agent") == "" {
		t.Fatalf("listing request %s with headers %v", reqs[0].Method, h)
	}
	if len(fx.srv.Requests()) != 0 {
		t.Fatal("the listing counted as a model request")
	}
}

func TestListModelsNone(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil) // the fake answers 404 by default
	for range 2 {
		ids, err := fx.p.ListModels(context.Background())
		if ids != nil {
			t.Fatalf("ids = %q", ids)
		}
		wantError(t, err, provider.CodeProviderError, "openai: listing models failed: GET /models answered HTTP 404")
	}
	if n := len(fx.srv.ModelRequests()); n != 1 {
		t.Fatalf("%d listing requests, want 1: a failure is cached too", n)
	}
	if !strings.Contains(fx.logs.String(), "lists no models") {
		t.Fatalf("no debug line about the missing listing in %q", fx.logs.String())
	}

	empty := newFixture(t, nil)
	empty.srv.SetModels()
	_, err := empty.p.ListModels(context.Background())
	wantError(t, err, provider.CodeProviderError, "the list is empty")
}

// TestListModelsBadAnswers covers what a server may answer instead of a
// list: each is an error, never a partial list, and none hangs.
func TestListModelsBadAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		handler http.HandlerFunc
		code    provider.Code
		want    string
	}{
		{"not json", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>")) }, provider.CodeProviderError, "not an OpenAI model list"},
		{"too big", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"data":[{"id":"` + strings.Repeat("x", maxModelsBody) + `"}]}`))
		}, provider.CodeResponseLimit, "exceeds"},
		{"too many", func(w http.ResponseWriter, _ *http.Request) {
			var b strings.Builder
			b.WriteString(`{"data":[`)
			for i := range maxModels + 1 {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"id":"m%04d"}`, i)
			}
			b.WriteString(`]}`)
			_, _ = w.Write([]byte(b.String()))
		}, provider.CodeResponseLimit, "more than the 500"},
		{"slow", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, provider.CodeProviderError, "no answer within 0.1 seconds"},
		{"key in the error", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, testKey, http.StatusUnauthorized) }, provider.CodeProviderError, "HTTP 401"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := httptest.NewServer(tc.handler)
			t.Cleanup(hs.Close)
			p, err := New(Config{BaseURL: hs.URL + "/v1", APIKey: testKey})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.CloseIdleConnections)
			if tc.name == "slow" {
				p.modelsTimeout = 100 * time.Millisecond
			}
			ids, err := p.ListModels(context.Background())
			if ids != nil {
				t.Fatalf("ids = %d", len(ids))
			}
			wantError(t, err, tc.code, tc.want)
		})
	}
}

// TestListModelsCallerCancelled: a caller that gives up does not decide
// the cached outcome for the others.
func TestListModelsCallerCancelled(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	fx.srv.SetModels("gpt-a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ids, err := fx.p.ListModels(ctx); err != nil || len(ids) != 1 {
		t.Fatalf("ListModels(cancelled) = %q, %v", ids, err)
	}
}

// FuzzParseModels: any body gives an error or a sorted list of distinct,
// non-empty, bounded ids, never more than maxModels.
func FuzzParseModels(f *testing.F) {
	f.Add([]byte(`{"object":"list","data":[{"id":"b"},{"id":"a"},{"id":"a"}]}`))
	f.Add([]byte(`{"data":[]}`))
	f.Add([]byte(`{"data":[{"id":""},{"id":1}]}`))
	f.Add([]byte(`<html>`))
	p, err := New(Config{BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ids, err := p.parseModels(body)
		if err != nil {
			if ids != nil {
				t.Fatalf("ids %q with error %v", ids, err)
			}
			return
		}
		if len(ids) == 0 || len(ids) > maxModels || !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
			t.Fatalf("ids %q", ids)
		}
		for _, id := range ids {
			if id == "" || len(id) > maxModelID {
				t.Fatalf("id %q", id)
			}
		}
	})
}
