package paths

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHome(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("uses HOME")
	}
	tests := []struct {
		name    string
		env     map[string]string
		want    string
		wantErr string
	}{
		{name: "SCV_HOME wins", env: map[string]string{"SCV_HOME": "/srv/scv", "HOME": "/home/u"}, want: "/srv/scv"},
		{name: "SCV_HOME cleaned", env: map[string]string{"SCV_HOME": "/srv//scv/"}, want: "/srv/scv"},
		{name: "default under HOME", env: map[string]string{"HOME": "/home/u"}, want: "/home/u/.scv"},
		{name: "empty SCV_HOME is unset", env: map[string]string{"SCV_HOME": "", "HOME": "/home/u"}, want: "/home/u/.scv"},
		{name: "relative SCV_HOME", env: map[string]string{"SCV_HOME": "rel/scv", "HOME": "/home/u"}, wantErr: `SCV_HOME must be an absolute path, but it is "rel/scv"`},
		{name: "tilde SCV_HOME", env: map[string]string{"SCV_HOME": "~/scv"}, wantErr: "did not expand ~"},
		{name: "no HOME", env: map[string]string{}, wantErr: "neither SCV_HOME nor HOME is set"},
		{name: "relative HOME", env: map[string]string{"HOME": "home"}, wantErr: "not an absolute path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Home(MapEnv(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Home() = %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Home() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestMapEnvCopies(t *testing.T) {
	t.Parallel()
	m := map[string]string{"A": "1"}
	env := MapEnv(m)
	m["A"] = "2"
	m["B"] = "3"
	if v := env.Getenv("A"); v != "1" {
		t.Fatalf("Getenv(A) = %q, want 1", v)
	}
	if _, ok := env.LookupEnv("B"); ok {
		t.Fatal("LookupEnv(B) saw a later change to the map")
	}
	if v, ok := MapEnv(map[string]string{"E": ""}).LookupEnv("E"); !ok || v != "" {
		t.Fatalf("LookupEnv(E) = %q, %v; want \"\", true", v, ok)
	}
	if _, ok := MapEnv(nil).LookupEnv("PATH"); ok {
		t.Fatal("MapEnv(nil) is not empty")
	}
}

func TestOSEnv(t *testing.T) {
	t.Setenv("SCV_PATHS_TEST_VAR", "x")
	if v, ok := OSEnv().LookupEnv("SCV_PATHS_TEST_VAR"); !ok || v != "x" {
		t.Fatalf("OSEnv().LookupEnv = %q, %v", v, ok)
	}
}

func TestHelpers(t *testing.T) {
	t.Parallel()
	home := filepath.FromSlash("/h/.scv")
	checks := map[string]string{
		ConfigFile(home):          "/h/.scv/config.toml",
		StateDir(home):            "/h/.scv/state",
		AgentsDir(home):           "/h/.scv/agents",
		ProjectDir("/w"):          "/w/.scv",
		ProjectConfigFile("/w"):   "/w/.scv/config.toml",
		ProjectConfigFile("/w/"):  "/w/.scv/config.toml",
		ConfigFile(home + "/"):    "/h/.scv/config.toml",
		StateDir("/h/.scv/../x"):  "/h/x/state",
		AgentsDir("/h/./.scv///"): "/h/.scv/agents",
	}
	for got, want := range checks {
		if got != filepath.FromSlash(want) {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	d, err := AgentDir(home, "codex")
	if err != nil || d != filepath.FromSlash("/h/.scv/agents/codex") {
		t.Errorf("AgentDir = %q, %v", d, err)
	}
	for _, bad := range []string{"", ".", "..", "a/b", `a\b`, "a\x00"} {
		if _, err := AgentDir(home, bad); err == nil {
			t.Errorf("AgentDir(%q) accepted", bad)
		}
	}
}
