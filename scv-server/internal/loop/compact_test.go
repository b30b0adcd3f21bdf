package loop

import (
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/scv-server/internal/tokens"
)

// TestRenderForSummary: an earlier summary leads the compaction request,
// whole when it fits half the budget and cut at its end otherwise; the
// transcript after it gets the rest of the budget, newest lines kept.
func TestRenderForSummary(t *testing.T) {
	t.Parallel()
	turns := func(n int) []provider.Message {
		var msgs []provider.Message
		for i := range n {
			msgs = append(msgs,
				provider.Message{Role: provider.RoleUser, Content: "question " + strings.Repeat("q", 300) + string(rune('A'+i%26))},
				provider.Message{Role: provider.RoleAssistant, Content: "answer " + strings.Repeat("a", 300)})
		}
		return msgs
	}
	summary := func(text string) provider.Message {
		return provider.Message{Role: provider.RoleUser, Content: SummaryPrefix + "\n\n" + text}
	}
	const budget = 1000
	for _, tc := range []struct {
		name    string
		earlier string
		whole   bool
	}{
		{"short earlier summary", "EARLIER goals and decisions", true},
		{"earlier summary over half the budget", "EARLIER " + strings.Repeat("long summary ", 2000), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := append([]provider.Message{summary(tc.earlier)}, turns(20)...)
			got := renderForSummary(old, budget)
			if !strings.HasPrefix(got, earlierSummaryHeader+"\n\nEARLIER") {
				t.Fatalf("the request does not start with the earlier summary: %.120q", got)
			}
			if tc.whole != strings.Contains(got, tc.earlier) {
				t.Fatalf("earlier summary whole = %v, want %v", !tc.whole, tc.whole)
			}
			if !tc.whole && !strings.Contains(got, "…[cut]") {
				t.Fatal("a cut earlier summary is not marked")
			}
			if n := tokens.Estimate(got); n > budget+100 {
				t.Fatalf("the request is about %d tokens, over the %d budget", n, budget)
			}
			if !strings.Contains(got, "earlier entries omitted") || !strings.Contains(got, strings.Repeat("q", 300)+"T") {
				t.Fatalf("the transcript should keep its newest lines and say what it omitted: %.200q", got[len(got)-200:])
			}
		})
	}
	// Without an earlier summary the request is the transcript alone.
	if got := renderForSummary(turns(2), budget); !strings.HasPrefix(got, "Summarize this conversation:") {
		t.Fatalf("got %.80q", got)
	}
}
