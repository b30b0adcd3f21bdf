package cmd

import (
	"strings"
	"testing"
	"time"
)

func TestParseAge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"7d", 7 * 24 * time.Hour, true},
		{"1.5d", 36 * time.Hour, true},
		{"90m", 90 * time.Minute, true},
		{"12h", 12 * time.Hour, true},
		{"0d", 0, true},
		{"-1d", 0, false},
		{"-2h", 0, false},
		{"d", 0, false},
		{"soon", 0, false},
		{"1000000d", 0, false},
		{"", 0, false},
	} {
		got, err := parseAge(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseAge(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParseAge(f *testing.F) {
	for _, s := range []string{"7d", "90m", "1h30m", "-1d", "NaNd", "Infd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := parseAge(s); err == nil && d < 0 {
			t.Fatalf("parseAge(%q) = %v", s, d)
		}
	})
}

func TestAge(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		ago  time.Duration
		want string
	}{
		{5 * time.Second, "5s"},
		{125 * time.Second, "2m05s"},
		{3*time.Hour + 4*time.Minute, "3h04m"},
		{50 * time.Hour, "2d02h"},
		{-time.Minute, "0s"},
	} {
		if got := age(now, now.Add(-tc.ago).Unix()); got != tc.want {
			t.Errorf("age(%v) = %q, want %q", tc.ago, got, tc.want)
		}
	}
	if age(now, 0) != "-" {
		t.Error("age of an unset time")
	}
}

func TestSummarizeStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		agent, out string
		code       int
		want       string
	}{
		{"claude", `{"loggedIn":true,"authMethod":"claude.ai","email":"a@b.c","subscriptionType":"max"}`, 0, "signed in (Claude account, max)"},
		{"claude", `{"loggedIn":true,"authMethod":"api_key","apiKeySource":"sk-ant-123"}`, 0, "signed in (API key)"},
		{"claude", `{"loggedIn":true,"authMethod":"claude.ai","subscriptionType":"me@example.com"}`, 0, "signed in (Claude account)"},
		{"claude", `{"loggedIn":false}`, 1, "signed out: run scv agents login claude"},
		{"claude", "Logged in as a@b.c", 0, "signed in"},
		{"claude", "error", 1, "signed out: run scv agents login claude"},
		{"codex", "Logged in using ChatGPT", 0, "signed in (ChatGPT account)"},
		{"codex", "Logged in using an API key - sk-proj-***ABCD", 0, "signed in (API key)"},
		{"codex", "Not logged in", 1, "signed out: run scv agents login codex, or scv agents import codex"},
		{"codex", "something new", 0, "signed in"},
	} {
		got := SummarizeStatus(tc.agent, []byte(tc.out), tc.code)
		if got != tc.want {
			t.Errorf("SummarizeStatus(%s, %q, %d) = %q, want %q", tc.agent, tc.out, tc.code, got, tc.want)
		}
	}
}

func FuzzSummarizeStatus(f *testing.F) {
	f.Add(uint8(0), `{"loggedIn":true,"subscriptionType":"pro"}`, 0)
	f.Add(uint8(1), "Logged in using an API key - sk-abc", 0)
	agents := []string{"claude", "codex", "grok"}
	f.Fuzz(func(t *testing.T, which uint8, out string, code int) {
		got := SummarizeStatus(agents[int(which)%len(agents)], []byte(out), code)
		// A summary is one of a few fixed forms; only a short plan name
		// from the output may appear in it.
		if !strings.HasPrefix(got, "signed in") && !strings.HasPrefix(got, "signed out") {
			t.Fatalf("summary %q", got)
		}
		if strings.Contains(got, "@") || len(got) > 100 {
			t.Fatalf("summary %q may leak the output", got)
		}
	})
}

func TestNamesLive(t *testing.T) {
	t.Parallel()
	live := map[string]bool{"0199-abc": true}
	if !namesLive("proj/0199-abc.jsonl", live) || !namesLive("0199-abc/sub/x.jsonl", live) || namesLive("proj/other.jsonl", live) {
		t.Fatal("namesLive")
	}
	if namesLive("x", map[string]bool{"": true}) {
		t.Fatal("an empty id matches everything")
	}
}
