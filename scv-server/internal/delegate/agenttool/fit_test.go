package agenttool

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/jobs"
)

// checkFits fails unless out is valid JSON of at most limit bytes.
func checkFits(t *testing.T, out string, limit int) {
	t.Helper()
	if len(out) > limit {
		t.Errorf("output of %d bytes, over the limit of %d", len(out), limit)
	}
	if !json.Valid([]byte(out)) {
		t.Errorf("output is not valid JSON: %.300q…", out)
	}
}

// checkShortened fails unless got is a prefix of want, ends on a
// character boundary, and (when cut) leaves the JSON close to the limit:
// shortening takes the overflow, not more.
func checkShortened(t *testing.T, got, want string, truncated bool, outLen, limit int) {
	t.Helper()
	if !strings.HasPrefix(want, got) || !utf8.ValidString(got) {
		t.Errorf("reply of %d bytes is not a whole-character prefix of the original", len(got))
	}
	cut := len(got) < len(want)
	if cut != truncated {
		t.Errorf("reply cut %v, truncated %v", cut, truncated)
	}
	if cut && got != "" && outLen < limit-6 {
		t.Errorf("output of %d bytes: cut more than the overflow below the limit of %d", outLen, limit)
	}
}

var fitReplies = []struct {
	name string
	unit string // repeated to fill the reply
}{
	{"ascii", "a"},
	{"two-byte", "ü"},
	{"four-byte", "😀"},
	{"quotes", `say "hi" `},
	{"newlines", "line\n"},
	{"html", "<a href=x>&</a>"},
	{"backslash and tab", "\\\t"},
	{"controls and separators", "\x01\u2028\x7f"},
	{"mixed", "ü\"<😀\n&"},
}

// TestFitResult: a reply at or over the output limit, bounded by the
// runner but not its JSON, is shortened so the whole result is valid JSON
// within the limit, keeping the session; one that fits is left alone.
func TestFitResult(t *testing.T) {
	t.Parallel()
	const limit = 4096
	for _, rc := range fitReplies {
		for _, size := range []int{limit / 4, limit - 400, limit, 3 * limit} {
			reply, _ := boundText(strings.Repeat(rc.unit, size/len(rc.unit)+1), size)
			t.Run(rc.name+"/"+itoa(size), func(t *testing.T) {
				r := delegate.Result{
					Agent: "claude", Status: delegate.StatusFailed, Reply: reply,
					StderrTail: strings.Repeat("<err>\n", 300)[:1800],
					Error:      `Claude Code exited with code 1: "boom"`,
					Hint:       delegate.SignInHint("Claude Code", "claude"),
					Fallback:   "This agent could not run. Other agents are available: codex.",
					Session:    "claude-3", Turn: 2,
				}
				out, cut := fitResult(&r, limit)
				checkFits(t, out, limit)
				var got delegate.Result
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatal(err)
				}
				if got.Session != "claude-3" || got.Turn != 2 || got.Hint != r.Hint || got.Error != r.Error {
					t.Errorf("lost a field: %+v", got)
				}
				if got.Reply != r.Reply || got.Truncated != r.Truncated || cut != got.Truncated {
					t.Errorf("output reply/truncated differ from the fitted result (cut %v)", cut)
				}
				checkShortened(t, got.Reply, reply, got.Truncated, len(out), limit)
				if fits := len(encode(delegate.Result{Agent: "claude", Status: delegate.StatusFailed, Reply: reply, StderrTail: r.StderrTail,
					Error: r.Error, Hint: r.Hint, Fallback: r.Fallback, Session: "claude-3", Turn: 2})) <= limit; fits == got.Truncated {
					t.Errorf("fits %v but truncated %v", fits, got.Truncated)
				}
			})
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestFitResultOtherFields: with the reply gone, the stderr tail loses its
// start, then the other fields their end; a limit no result fits still
// gets valid JSON.
func TestFitResultOtherFields(t *testing.T) {
	t.Parallel()
	tail := strings.Repeat("<", 2000) + "the last line"
	r := delegate.Result{Agent: "pi", Status: delegate.StatusFailed, Reply: strings.Repeat("&", 3000), StderrTail: tail,
		Error: strings.Repeat("e", 300), Session: "pi-1", Turn: 1}
	out, cut := fitResult(&r, 1024)
	checkFits(t, out, 1024)
	if !cut || r.Reply != "" || !strings.HasSuffix(r.StderrTail, "the last line") || len(r.StderrTail) >= len(tail) || len(r.Error) != 300 || r.Session != "pi-1" || !r.Truncated {
		t.Errorf("fitted %s", out)
	}
	// Past the stderr tail, the error loses its end.
	r = delegate.Result{Agent: "pi", Status: delegate.StatusFailed, StderrTail: tail, Error: strings.Repeat("é", 1000), Session: "pi-1"}
	out, _ = fitResult(&r, 1024)
	checkFits(t, out, 1024)
	if r.StderrTail != "" || r.Error == "" || !strings.HasPrefix(strings.Repeat("é", 1000), r.Error) || r.Session != "pi-1" {
		t.Errorf("fitted %s", out)
	}
	small := delegate.Result{Agent: "pi", Status: delegate.StatusFailed, Error: "x", Session: "pi-1"}
	out, cut = fitResult(&small, 20)
	checkFits(t, out, 20)
	if !cut {
		t.Errorf("tiny limit: %s", out)
	}
}

// TestFitThroughTools runs a call whose reply is at and over the output
// limit through agent, agent_wait, agent_status (one job and the list) and
// agent_cancel: each output is valid JSON within tools.Env.OutputLimit and
// keeps the session.
func TestFitThroughTools(t *testing.T) {
	t.Parallel()
	const limit = 2048
	for _, rc := range fitReplies {
		for _, size := range []int{limit, 2 * limit} {
			t.Run(rc.name+"/"+itoa(size), func(t *testing.T) {
				reply, _ := boundText(strings.Repeat(rc.unit, size/len(rc.unit)+1), size)
				// The Set's own limit is larger: the call's governs.
				fx := newFixture(t, []string{"claude"}, func(o *Options) { o.Prefer = []string{"claude"}; o.OutputLimit = 64 << 10 })
				fx.env.OutputLimit = limit
				fx.fakes["claude"].respond = func(c delegate.Call) delegate.Result {
					return delegate.Result{Status: delegate.StatusCompleted, Reply: reply, StderrTail: strings.Repeat("\"", 500), CLISession: c.NewCLISession + c.ResumeCLISession}
				}
				res := fx.call(NameAgent, map[string]any{"prompt": "x"})
				checkFits(t, res.Output, limit)
				r := result(t, res)
				if r.Session != "claude-1" || !res.Truncated || !r.Truncated {
					t.Errorf("agent: session %q, truncated %v/%v", r.Session, res.Truncated, r.Truncated)
				}
				checkShortened(t, r.Reply, reply, r.Truncated, len(res.Output), limit)

				fx.call(NameAgent, map[string]any{"session": "claude-1", "prompt": "more", "background": true})
				for _, call := range []struct {
					tool string
					args map[string]any
				}{
					{NameWait, map[string]any{"job": "job-1"}},
					{NameStatus, map[string]any{"job": "job-1"}},
					{NameCancel, map[string]any{"job": "job-1"}},
				} {
					res := fx.call(call.tool, call.args)
					checkFits(t, res.Output, limit)
					v := view(t, res)
					if v.Result == nil || v.Result.Session != "claude-1" || v.Result.Turn != 2 || !v.Result.Truncated || !res.Truncated {
						t.Errorf("%s: %.400s", call.tool, res.Output)
						continue
					}
					checkShortened(t, v.Result.Reply, reply, v.Result.Truncated, len(res.Output), limit)
				}
				res = fx.call(NameStatus, map[string]any{})
				checkFits(t, res.Output, limit)
			})
		}
	}
}

// TestFitListing: a listing of many finished jobs whose replies escape
// heavily stays valid JSON within the limit.
func TestFitListing(t *testing.T) {
	t.Parallel()
	const limit = 1024
	fx := newFixture(t, []string{"dsh"}, func(o *Options) { o.Prefer = []string{"dsh"}; o.MaxBackground = 8 })
	fx.env.OutputLimit = limit
	fx.fakes["dsh"].respond = func(delegate.Call) delegate.Result {
		return delegate.Result{Status: delegate.StatusFailed, Reply: strings.Repeat("<&>", 200), StderrTail: strings.Repeat("\x01", 300), Error: "it failed"}
	}
	for i := 1; i <= 6; i++ {
		fx.call(NameAgent, map[string]any{"prompt": "x", "background": true})
		fx.call(NameWait, map[string]any{"job": "job-" + itoa(i)})
	}
	res := fx.call(NameStatus, map[string]any{})
	checkFits(t, res.Output, limit)
	var list struct{ Jobs []jobs.View }
	if err := json.Unmarshal([]byte(res.Output), &list); err != nil || len(list.Jobs) != 6 {
		t.Fatalf("listing %v: %s", err, res.Output)
	}
}

// FuzzFitResult: whatever the reply and the limit, the output is valid
// JSON within the limit.
func FuzzFitResult(f *testing.F) {
	for _, rc := range fitReplies {
		f.Add(strings.Repeat(rc.unit, 300), 1024)
	}
	f.Add("\xff\xfe invalid", 30)
	f.Fuzz(func(t *testing.T, reply string, limit int) {
		if limit < 2 || limit > 1<<16 {
			t.Skip()
		}
		r := delegate.Result{Agent: "codex", Status: delegate.StatusCompleted, Reply: reply, Session: "codex-1", Turn: 1}
		out, _ := fitResult(&r, limit)
		checkFits(t, out, limit)
		if len(encode(&r)) <= limit && out != encode(&r) {
			t.Errorf("output differs from the fitted result")
		}
	})
}
