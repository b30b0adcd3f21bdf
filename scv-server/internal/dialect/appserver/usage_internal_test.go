package appserver

import (
	"encoding/json"
	"testing"
)

// TestCacheAccounting: a cycle whose provider said how much input came from
// its cache is provider_reported with that read count and the rest
// uncached; the aggregate is reported only when every cycle is, since an
// unreported cycle would read as a lower hit rate.
func TestCacheAccounting(t *testing.T) {
	t.Parallel()
	cycle := func(in int64, cached *int64) Cycle {
		return Cycle{Usage: CycleUsage{InputTokens: in, CacheUsage: cacheUsage(in, cached, "provider_usage")}}
	}
	text := func(c CacheUsage) string {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	all := tokenUsage([]Cycle{cycle(100, new(int64(60))), cycle(50, new(int64(0)))})
	if got, want := text(all.CacheUsage), `{"status":"provider_reported","read_input_tokens":60,"write_input_tokens":null,"uncached_input_tokens":90,"source":"aggregate"}`; got != want {
		t.Errorf("every cycle reported: %s, want %s", got, want)
	}
	if got, want := text(all.Cycles[1].Usage.CacheUsage), `{"status":"provider_reported","read_input_tokens":0,"write_input_tokens":null,"uncached_input_tokens":50,"source":"provider_usage"}`; got != want {
		t.Errorf("an observed zero: %s, want %s", got, want)
	}
	some := tokenUsage([]Cycle{cycle(100, new(int64(60))), cycle(50, nil)})
	if got, want := text(some.CacheUsage), `{"status":"accounting_missing","read_input_tokens":null,"write_input_tokens":null,"uncached_input_tokens":null,"source":"aggregate"}`; got != want {
		t.Errorf("one cycle unreported: %s, want %s", got, want)
	}
}
