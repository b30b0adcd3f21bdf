package client

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeExe creates an executable file at dir/name.
func writeExe(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFind(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	server := writeExe(t, bin, Server)
	self := writeExe(t, bin, "scv")
	// A symlink to scv elsewhere must still find the real siblings.
	link := filepath.Join(t.TempDir(), "scv")
	if err := os.Symlink(self, link); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	onPath := writeExe(t, t.TempDir(), Server)
	override := writeExe(t, t.TempDir(), "my-server")
	noExec := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(noExec, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	notOnPath := func(string) (string, error) { return "", errors.New("not found") }
	pathHas := func(p string) func(string) (string, error) {
		return func(string) (string, error) { return p, nil }
	}
	tests := []struct {
		name     string
		self     string
		lookPath func(string) (string, error)
		env      string // SCV_SERVER_BIN
		want     string
		wantErr  []string
	}{
		{name: "next to scv", self: self, lookPath: notOnPath, want: server},
		{name: "next to the symlink's target", self: link, lookPath: notOnPath, want: server},
		{name: "next to scv wins over PATH", self: self, lookPath: pathHas(onPath), want: server},
		{name: "PATH", self: filepath.Join(empty, "scv"), lookPath: pathHas(onPath), want: onPath},
		{name: "the variable wins", self: self, lookPath: pathHas(onPath), env: override, want: override},
		{
			name: "a missing override is an error, not a fallback", self: self, lookPath: pathHas(onPath), env: filepath.Join(empty, "nope"),
			wantErr: []string{"SCV_SERVER_BIN=" + filepath.Join(empty, "nope") + " cannot be run: no such file; point it at the scv-server binary, or unset it to use the one next to scv"},
		},
		{
			name: "override not executable", self: self, lookPath: notOnPath, env: noExec,
			wantErr: []string{"SCV_SERVER_BIN=" + noExec + " cannot be run: it is not executable"},
		},
		{
			name: "nowhere", self: filepath.Join(empty, "scv"), lookPath: notOnPath,
			wantErr: []string{"scv-server not found: SCV_SERVER_BIN is not set, and it is neither next to scv (in " + empty + ") nor on $PATH; build it with scripts/build.sh, which puts every SCV binary in bin/, or set SCV_SERVER_BIN to its path"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := Finder{
				Self:       "scv",
				Executable: func() (string, error) { return tt.self, nil },
				LookPath:   tt.lookPath,
				Getenv: func(k string) string {
					if k == "SCV_SERVER_BIN" {
						return tt.env
					}
					return ""
				},
			}
			got, err := f.Find(Server)
			if tt.wantErr != nil {
				var nf *NotFoundError
				if !errors.As(err, &nf) {
					t.Fatalf("Find = %q, %v; want a *NotFoundError", got, err)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Find = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestFindNamesTheProgramAndItsVariable(t *testing.T) {
	t.Parallel()
	f := Finder{
		Executable: func() (string, error) { return "", errors.New("unknown") },
		LookPath:   func(string) (string, error) { return "", errors.New("not found") },
		Getenv:     func(string) string { return "" },
	}
	_, err := f.Find(TUI)
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.Name != TUI {
		t.Fatalf("Find(scv-tui) error = %v, want *NotFoundError for scv-tui", err)
	}
	for _, s := range []string{"SCV_TUI_BIN", "next to this program nor"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if OverrideEnv(Agents) != "SCV_AGENTS_BIN" || OverrideEnv("scv-bridge") != "" {
		t.Errorf("OverrideEnv: %q, %q", OverrideEnv(Agents), OverrideEnv("scv-bridge"))
	}
}
