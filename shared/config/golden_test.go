package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/testkit/golden"
)

// TestValidationMessagesGolden compares the exact message of every kind of
// configuration error with testdata/errors/<name>.golden. The files' paths
// appear as $USER and $PROJECT. Run with -update to rewrite the files.
func TestValidationMessagesGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		user    string
		project string
		env     map[string]string
	}{
		{name: "unknown_key_did_you_mean", user: "[tools]\naproval_policy = \"never\"\n"},
		{name: "unknown_key", user: "[tools]\nzzz = 1\n"},
		{name: "unknown_table_did_you_mean", user: "[agnet]\nmax_steps = 3\n"},
		{name: "unknown_provider_key", user: "[providers.openai]\nmodle = \"gpt-4.1\"\n"},
		{name: "wrong_type_string", user: "[tools]\napproval_policy = 3\n"},
		{name: "wrong_type_integer", user: "[tools]\noutput_limit_bytes = \"big\"\n"},
		{name: "wrong_type_table", user: "[providers.openai]\nheaders = \"x\"\n"},
		{name: "out_of_range_low", user: "[tools]\noutput_limit_bytes = 10\n"},
		{name: "out_of_range_high", user: "[agent]\ncompact_threshold_percent = 99\n"},
		{name: "out_of_range_negative", user: "[providers.openai]\nmax_retries = -1\n"},
		{name: "max_timeout_below_command_timeout", user: "[tools]\ncommand_timeout_seconds = 100\nmax_timeout_seconds = 50\n"},
		{name: "unknown_policy", user: "[tools]\napproval_policy = \"sometimes\"\n"},
		{name: "unknown_policy_project", project: "[tools]\napproval_policy = \"sometimes\"\n"},
		{name: "unknown_policy_env", env: map[string]string{"SCV_APPROVAL_POLICY": "yolo"}},
		{name: "unknown_kind", user: "[providers.x]\nkind = \"anthropic\"\n"},
		{name: "unknown_wire_api", user: "[providers.x]\nwire_api = \"grpc\"\n"},
		{name: "bad_base_url", user: "[providers.x]\nbase_url = \"ftp://example.com\"\n"},
		{name: "active_names_no_table", user: "[provider]\nactive = \"missing\"\n\n[providers.openai]\nmodel = \"m\"\n"},
		{name: "several_providers_no_active", user: "[providers.a]\nmodel = \"m\"\n\n[providers.b]\nmodel = \"m\"\n"},
		{name: "demo_table_reserved", user: "[providers.demo]\nmodel = \"m\"\n"},
		{name: "syntax_error", user: "[tools]\noutput_limit_bytes = 2048\n[tools\n"},
		{name: "syntax_error_project", project: "[tools]\napproval_policy = \"never\n"},
		{name: "defined_twice", user: "[tools]\nspill_max_bytes = 1\nspill_max_bytes = 2\n"},
		{name: "prefer_unknown_agent", user: "[agent]\nprefer = [\"codex\", \"zcode\"]\n"},
		{name: "prefer_twice", user: "[agent]\nprefer = [\"codex\", \"codex\"]\n"},
		{name: "agents_unknown_name", user: "[agents.zcode]\nuse_for = \"x\"\n"},
		{name: "agents_model_not_taken", user: "[agents.dsh]\nmodel = \"deepseek-v4\"\n"},
		{name: "agents_effort_not_taken", user: "[agents.scv]\neffort = \"high\"\n"},
		{name: "agents_bad_effort", user: "[agents.codex]\neffort = \"extreme\"\n"},
		{name: "agents_bad_model", user: "[agents.claude]\nmodel = \"-rm\"\n"},
		{name: "agents_use_for_newline", user: "[agents.claude]\nuse_for = \"a\\nb\"\n"},
		{name: "agents_bad_permissions", user: "[agents.codex]\npermissions = \"all\"\n"},
		{name: "agents_bad_transport", user: "[agents.codex]\ntransport = \"ssh\"\n"},
		{name: "agents_acp_without_server", user: "[agents.pi]\ntransport = \"acp\"\n\n[agents.scv]\ntransport = \"resume\"\n"},
		{name: "agents_bad_command", user: "[agents.claude]\ncommand = \"bin/claude\"\n\n[agents.codex]\ncommand = \" codex\"\n\n[agents.grok]\ncommand = \"/opt/grok\"\ntransport = \"acp\"\n\n[agents.scv]\ncommand = \"/usr/bin/scv\"\n"},
		{name: "web_bad_domain", user: "[web]\nauto_approve_domains = [\"https://docs.rs/\"]\n"},
		{name: "web_unknown_search", user: "[web]\nsearch = \"google\"\n"},
		{name: "web_searxng_without_url", user: "[web]\nsearch = \"searxng\"\n"},
		{name: "web_provider_search_chat_wire", user: "[providers.openai]\nmodel = \"m\"\n\n[web]\nsearch = \"provider\"\n"},
		{name: "web_fetch_max_bytes_low", user: "[web]\nfetch_max_bytes = 10\n"},
		{name: "web_bad_ports", user: "[web]\nallowed_ports = [\"443\", \"http\", \"0\", \"70000\", \"9000-8000\", \"8000-\"]\n"},
		{name: "web_no_ports", user: "[web]\nallowed_ports = []\n"},
		{name: "web_ports_as_numbers", user: "[web]\nallowed_ports = [80, 443]\n"},
		{name: "several_errors", user: "[tools]\noutput_limit_bytes = 1\ncommand_timeout_seconds = 0\n"},
		// Every problem of a file in one pass: an unknown key does not
		// hide the values of the wrong type, nor those out of range.
		{name: "one_pass_user", user: "[tools]\naproval_policy = \"never\"\noutput_limit_bytes = \"64k\"\ncommand_timeout_seconds = 0\n" +
			"[agent]\nmax_steps = 2.5\ncompact_threshold_percent = 99\nprefer = [\"codex\", 3]\n" +
			"[providers.openai]\nheaders = { X-Org = 1, X-Team = \"ok\" }\nmax_retries = -1\nmodle = \"m\"\n"},
		// And of every file: the user file, the project file and the
		// environment, in that order.
		{name: "one_pass_all_sources",
			user:    "[tools]\nzzz = 1\nspill_max_bytes = -5\n",
			project: "[tools]\ncommand_timeout_seconds = \"soon\"\noutput_limit_bytes = 2\n[provider]\nactive = \"x\"\n",
			env:     map[string]string{"SCV_APPROVAL_POLICY": "yolo"}},
		// A file that is not TOML hides only its own other problems.
		{name: "one_pass_syntax_error", user: "[tools]\noutput_limit_bytes = 5\n[agent\n",
			project: "[tools]\nunknown_key = 1\n", env: map[string]string{"SCV_APPROVAL_POLICY": "yolo"}},
		// A value of the wrong type is reported once, not again through
		// the default it leaves (here: which provider is active).
		{name: "one_pass_no_follow_on", user: "[provider]\nactive = 3\n\n[providers.a]\nmodel = \"m\"\n\n[providers.b]\nmodel = \"m\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.user, tt.project)
			_, _, err := f.load(tt.env)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			got := strings.NewReplacer(f.userFile, "$USER", f.projectFile, "$PROJECT").Replace(err.Error()) + "\n"
			path := filepath.Join("testdata", "errors", tt.name+".golden")
			golden.Equal(t, path, got)
		})
	}
}

func TestEntriesRedact(t *testing.T) {
	t.Parallel()
	user := "[providers.a]\napi_key = \"sk-secret-1\"\nheaders = { X-Token = \"tok-secret-2\" }\n\n[providers.b]\napi_key_env = \"B_KEY\"\n\n[provider]\nactive = \"a\"\n"
	f := newFixture(t, user, "")
	c, _ := mustLoad(t, f, nil)
	for _, env := range []map[string]string{nil, {"B_KEY": "sk-secret-3"}} {
		for _, e := range c.Entries(paths.MapEnv(env)) {
			if s := fmt.Sprint(e.Value); strings.Contains(s, "secret") {
				t.Errorf("%s = %s reveals a secret", e.Key, s)
			}
			switch e.Key {
			case "providers.a.api_key":
				if e.Value != Set || !e.Redacted || e.Source.Line != 2 {
					t.Errorf("%s = %+v", e.Key, e)
				}
			case "providers.b.api_key":
				if e.Value != NotSet {
					t.Errorf("%s = %+v", e.Key, e)
				}
			case "providers.a.headers":
				if h, ok := e.Value.(map[string]string); !ok || h["X-Token"] != Set || len(h) != 1 {
					t.Errorf("%s = %+v", e.Key, e)
				}
			case "providers.b.api_key_env":
				if e.Value != "B_KEY" || e.EnvSet == nil || *e.EnvSet != (env != nil) {
					t.Errorf("%s = %+v (env %v)", e.Key, e, env)
				}
			}
		}
	}
	if n := len(c.Entries(nil)); n != len(c.Keys()) {
		t.Errorf("%d entries for %d keys", n, len(c.Keys()))
	}
}
