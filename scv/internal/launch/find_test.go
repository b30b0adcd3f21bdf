package launch

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
	linkDir := t.TempDir()
	link := filepath.Join(linkDir, "scv")
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
	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}

	tests := []struct {
		name     string
		self     string
		lookPath func(string) (string, error)
		env      map[string]string
		want     string
		wantErr  []string
	}{
		{name: "next to scv", self: self, lookPath: notOnPath, want: server},
		{name: "next to symlink target", self: link, lookPath: notOnPath, want: server},
		{name: "next to scv wins over PATH", self: self, lookPath: pathHas(onPath), want: server},
		{name: "PATH", self: filepath.Join(empty, "scv"), lookPath: pathHas(onPath), want: onPath},
		{name: "override", self: self, lookPath: notOnPath, env: map[string]string{"SCV_SERVER_BIN": override}, want: override},
		{
			name: "override missing", self: self, lookPath: notOnPath,
			env:     map[string]string{"SCV_SERVER_BIN": filepath.Join(empty, "nope")},
			wantErr: []string{"SCV_SERVER_BIN=", "no such file"},
		},
		{
			name: "override not executable", self: self, lookPath: notOnPath,
			env:     map[string]string{"SCV_SERVER_BIN": noExec},
			wantErr: []string{"is not executable"},
		},
		{
			name: "nowhere", self: filepath.Join(empty, "scv"), lookPath: notOnPath,
			wantErr: []string{"scv-server not found", "next to scv (in " + empty + ")", "$PATH", "scripts/build.sh", "SCV_SERVER_BIN"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &Finder{
				Executable: func() (string, error) { return tt.self, nil },
				LookPath:   tt.lookPath,
				Getenv:     env(tt.env),
			}
			got, err := f.Find(Server)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("Find = %q, want an error", got)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Find = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFindTUINotFound(t *testing.T) {
	t.Parallel()
	f := &Finder{
		Executable: func() (string, error) { return "", errors.New("unknown") },
		LookPath:   func(string) (string, error) { return "", errors.New("not found") },
		Getenv:     func(string) string { return "" },
	}
	_, err := f.Find(TUI)
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.Name != TUI {
		t.Fatalf("Find(scv-tui) error = %v, want *NotFoundError for scv-tui", err)
	}
	if !strings.Contains(err.Error(), "SCV_TUI_BIN") {
		t.Errorf("error %q does not name SCV_TUI_BIN", err)
	}
}
