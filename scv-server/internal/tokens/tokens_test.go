package tokens

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/scv-cli/scv/scv-server/internal/provider"
)

func TestEstimate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    string
		want int64
	}{
		{"", 0},
		{"a", 1},
		{"abcdefg", 2},
		{"日本語", 3},
		{"ab日本", 3},
	} {
		if got := Estimate(tc.s); got != tc.want {
			t.Errorf("Estimate(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
	m := provider.Message{Role: provider.RoleAssistant, Content: "abcdefg",
		ToolCalls: []provider.ToolCall{{Name: "read", Arguments: `{"path":"a"}`}}}
	if got := Message(m); got != 4+2+4+2+4 {
		t.Errorf("Message = %d", got)
	}
}

// TestEstimatorAgainstATokenizer measures the estimator against o200k_base
// on real text, and fails if it drifts from what the package doc claims.
func TestEstimatorAgainstATokenizer(t *testing.T) {
	t.Parallel()
	tiktoken.SetBpeLoader(loader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../../../../shared/testdata/web-pages/*.html")
	more, _ := filepath.Glob("../../../docs/*.md")
	files = append(files, more...)
	files = append(files, "../loop/loop.go", "tokens.go")
	if len(files) < 10 {
		// The spec pack's pages sit beside the checkout; the repository's
		// own docs and code are always here.
		t.Logf("only %d reference files", len(files))
	}
	var est, real float64
	worst := 0.0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := float64(len(enc.Encode(string(b), nil, nil)))
		e := float64(Estimate(string(b)))
		est += e
		real += n
		if r := (e - n) / n; r < worst {
			worst = r
		}
	}
	total := (est - real) / real
	t.Logf("%d files: estimate %+.1f%% in total, worst underestimate %+.1f%%", len(files), total*100, worst*100)
	if total < 0 || total > 0.30 || worst < -0.15 {
		t.Fatalf("estimator error %+.1f%% in total, worst %+.1f%%: update the package doc or the estimator", total*100, worst*100)
	}
}

func BenchmarkEstimate(b *testing.B) {
	data, err := os.ReadFile("../agent/loop.go")
	if err != nil {
		b.Fatal(err)
	}
	s := string(data)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		Estimate(s)
	}
}
