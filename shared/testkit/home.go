// Package testkit holds what the tests of every module share.
package testkit

import (
	"encoding/json"
	"os"
	"os/exec"
)

// IsolateHome points HOME at a fresh empty directory for the rest of the
// test binary and returns a function that removes it. The bash tool runs
// `/bin/bash -lc`, and a login shell reads the user's profile: one that
// loads pyenv or nvm costs half a second a command and can wait minutes on
// their locks under load, so tests that run shells must not depend on it.
// The Go caches keep their real places (fixed through the environment
// first), because tests that build binaries would otherwise start from an
// empty build cache.
func IsolateHome() (restore func()) {
	if out, err := exec.Command("go", "env", "-json", "GOPATH", "GOMODCACHE", "GOCACHE", "GOENV").Output(); err == nil {
		var vars map[string]string
		if json.Unmarshal(out, &vars) == nil {
			for k, v := range vars {
				if v != "" && os.Getenv(k) == "" {
					_ = os.Setenv(k, v)
				}
			}
		}
	}
	dir, err := os.MkdirTemp("", "scv-test-home-")
	if err != nil {
		// Keep the real home rather than fail every test: slower, not wrong.
		return func() {}
	}
	old, had := os.LookupEnv("HOME")
	_ = os.Setenv("HOME", dir)
	return func() {
		if had {
			_ = os.Setenv("HOME", old)
		} else {
			_ = os.Unsetenv("HOME")
		}
		_ = os.RemoveAll(dir)
	}
}
