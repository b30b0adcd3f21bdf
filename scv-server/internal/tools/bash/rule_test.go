package bash

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/tools"
)

func TestSessionRule(t *testing.T) {
	tests := []struct {
		command string
		key     string // the proposed rule's key; "" for none
		desc    string // checked when not empty
		keys    []string
	}{
		// Multi-command programs: the program and its subcommand.
		{command: "go test ./...", key: "bash:go test", desc: "bash commands that start with `go test`", keys: []string{"bash:go test", "bash:go"}},
		{command: "go test -run X ./internal/...", key: "bash:go test", keys: []string{"bash:go test", "bash:go"}},
		{command: "  go   test\t-v  ", key: "bash:go test", keys: []string{"bash:go test", "bash:go"}},
		{command: "go build ./cmd/x", key: "bash:go build", keys: []string{"bash:go build", "bash:go"}},
		{command: `git commit -m "fix the parser"`, key: "bash:git commit", desc: "bash commands that start with `git commit`", keys: []string{"bash:git commit", "bash:git"}},
		{command: "npm run build", key: "bash:npm run", keys: []string{"bash:npm run", "bash:npm"}},
		{command: "cargo build --release", key: "bash:cargo build", keys: []string{"bash:cargo build", "bash:cargo"}},
		{command: "make test", key: "bash:make test", keys: []string{"bash:make test", "bash:make"}},
		{command: "./gradlew check", key: "bash:./gradlew check", keys: []string{"bash:./gradlew check", "bash:./gradlew"}},
		// Other programs: the first word.
		{command: "ls -la src", key: "bash:ls", desc: "bash commands that start with `ls`", keys: []string{"bash:ls"}},
		{command: "pytest -q tests/test_x.py", key: "bash:pytest", keys: []string{"bash:pytest"}},
		{command: "./scripts/lint.sh", key: "bash:./scripts/lint.sh", keys: []string{"bash:./scripts/lint.sh"}},
		{command: "python -m pytest", key: "bash:python", keys: []string{"bash:python"}},
		{command: "grep -rn 'func main$' .", key: "bash:grep", keys: []string{"bash:grep"}},
		// Redirections that write nothing are allowed.
		{command: "go test ./... 2>&1", key: "bash:go test", keys: []string{"bash:go test", "bash:go"}},
		{command: "ls missing 2>/dev/null", key: "bash:ls", keys: []string{"bash:ls"}},
		// A multi-command program without a plain subcommand: keys, no rule.
		{command: "go", keys: []string{"bash:go"}},
		{command: "git --version", keys: []string{"bash:git"}},
		{command: "git -C other commit -m x", keys: []string{"bash:git"}},
		{command: "npx @biomejs/biome check", keys: []string{"bash:npx"}},
		// Control operators, substitutions and redirections: no rule, no key.
		{command: "go test ./... && rm -rf ~"},
		{command: "go test ./... || true"},
		{command: "go test ./...; rm -rf ~"},
		{command: "go test ./... | tail -20"},
		{command: "go test ./... |& tail"},
		{command: "go test &"},
		{command: "go test\nrm -rf ~"},
		{command: "go test `rm -rf ~`"},
		{command: "go test $(rm -rf ~)"},
		{command: "go test ${x@P}"},
		{command: "echo $[1+1]"},
		{command: "go test > out.txt"},
		{command: "go test >> out.txt"},
		{command: "go test 2>err.txt"},
		{command: "cat < /etc/passwd"},
		{command: "diff <(ls a) <(ls b)"},
		{command: `git commit -m "a; b"`}, // refused even when quoted
		{command: "ls\r"},
		// Wrappers, shells and assignments.
		{command: "sudo go test ./..."},
		{command: "env GOFLAGS=-race go test ./..."},
		{command: "FOO=1 go test ./..."},
		{command: "exec go test"},
		{command: "eval go test"},
		{command: "xargs rm"},
		{command: "timeout 10 go test"},
		{command: "nohup go test"},
		{command: "bash -c 'rm -rf ~'"},
		{command: "sh script.sh"},
		{command: ". ./env.sh"},
		{command: "source env.sh"},
		// Keywords and words that are not plain names.
		{command: "if true then echo x fi"},
		{command: "! go test"},
		{command: "[[ -f x ]]"},
		{command: "[ -f x ]"},
		{command: "'go' test"},
		{command: `g\o test`},
		{command: "$GO test"},
		{command: "~/bin/tool run"},
		{command: "*.sh"},
		{command: "# just a comment"},
		{command: "   "},
	}
	for _, tc := range tests {
		rule, keys := sessionRule(tc.command)
		if got := ruleKey(rule); got != tc.key {
			t.Errorf("%q: rule %q, want %q", tc.command, got, tc.key)
		}
		if tc.desc != "" && (rule == nil || rule.Description != tc.desc) {
			t.Errorf("%q: rule %+v, want description %q", tc.command, rule, tc.desc)
		}
		if !slices.Equal(keys, tc.keys) {
			t.Errorf("%q: keys %q, want %q", tc.command, keys, tc.keys)
		}
		if rule != nil && !slices.Contains(keys, rule.Key) {
			t.Errorf("%q: the rule %q does not cover its own call (keys %q)", tc.command, rule.Key, keys)
		}
	}
}

func ruleKey(r *tools.Rule) string {
	if r == nil {
		return ""
	}
	return r.Key
}

// TestPlanCarriesTheRule: Prepare puts the command's rule and keys in the
// plan.
func TestPlanCarriesTheRule(t *testing.T) {
	tool := New(Options{DefaultTimeout: time.Second, MaxTimeout: time.Minute})
	for cmd, want := range map[string]string{"go test ./...": "bash:go test", "go test && ls": ""} {
		args, _ := json.Marshal(map[string]any{"command": cmd})
		plan, err := tool.Prepare(tools.Env{}, args)
		if err != nil {
			t.Fatal(err)
		}
		if got := ruleKey(plan.Rule); got != want {
			t.Errorf("%q: plan rule %q, want %q", cmd, got, want)
		}
		if want == "" && len(plan.Keys) != 0 {
			t.Errorf("%q: keys %q, want none", cmd, plan.Keys)
		}
	}
}
