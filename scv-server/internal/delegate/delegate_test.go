package delegate

import (
	"slices"
	"testing"
)

func TestChainEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{"first delegation", []string{"HOME=/h", "PATH=/bin"},
			[]string{"HOME=/h", "PATH=/bin", "SCV_PARENT=/i/s1/codex-1", "SCV_DELEGATION_DEPTH=3"}},
		{"below another", []string{"SCV_PARENT=/o/s0/claude-9", "HOME=/h", "SCV_DELEGATION_DEPTH=1"},
			[]string{"HOME=/h", "SCV_PARENT=/o/s0/claude-9,/i/s1/codex-1", "SCV_DELEGATION_DEPTH=3"}},
		{"empty inherited chain", []string{"SCV_PARENT=", "SCV_DELEGATION_DEPTH=x"},
			[]string{"SCV_PARENT=/i/s1/codex-1", "SCV_DELEGATION_DEPTH=3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ChainEnv(slices.Clone(tt.env), "/i/s1/codex-1", 2); !slices.Equal(got, tt.want) {
				t.Errorf("ChainEnv(%q) = %q, want %q", tt.env, got, tt.want)
			}
		})
	}
}
