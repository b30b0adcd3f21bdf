package placeholder

import (
	"bytes"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/version"
)

func TestRun(t *testing.T) {
	t.Parallel()
	c := Command{Name: "scv-x", Short: "X (not built yet)", Long: "scv-x will do X. It is not built yet.", NotBuilt: "X is not built yet"}
	tests := []struct {
		name     string
		args     []string
		wantCode cli.Code
		wantOut  string // substring of stdout, or "" for none
		wantErr  string // substring of stderr, or "" for none
	}{
		{name: "version", args: []string{"--version"}, wantOut: "scv-x " + version.Version + "\n"},
		{name: "help", args: []string{"--help"}, wantOut: "not built yet"},
		{name: "no args says it is not built", args: nil, wantCode: cli.Failure, wantErr: "scv-x: X is not built yet\n"},
		{name: "unknown command", args: []string{"serve"}, wantCode: cli.Usage, wantErr: `unknown command "serve"`},
		{name: "unknown flag", args: []string{"--bogus"}, wantCode: cli.Usage, wantErr: "unknown flag: --bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := c.Run(tt.args, &out, &errOut)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.wantCode, errOut.String())
			}
			if tt.wantOut == "" && out.Len() > 0 || !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("stdout = %q, want it to contain %q", out.String(), tt.wantOut)
			}
			if tt.wantErr == "" && errOut.Len() > 0 || !strings.Contains(errOut.String(), tt.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", errOut.String(), tt.wantErr)
			}
		})
	}
}
