// Package childenv builds the environment of the programs SCV starts on
// the user's behalf that are not the user's own shell: delegated agent
// CLIs and their sign-in commands. It starts from an allow-list (Base)
// instead of removing known secrets from the server's environment, so a
// secret SCV has never heard of (GH_TOKEN, AWS_SECRET_ACCESS_KEY, a
// provider key whose variable does not end in _API_KEY) and variables that
// change how programs load (LD_PRELOAD, BASH_ENV, NODE_OPTIONS) are not
// inherited. The bash tool runs the user's commands with the user's
// environment and only removes SCV's own secrets from it (Without).
package childenv

import (
	"slices"
	"strings"
)

// Base are the variables every delegated CLI inherits from the server:
// where programs are (PATH), the user's locale and terminal, the time
// zone, the temporary directory, who the user is, the proxy settings and
// the certificate authorities a proxy may need, and SCV's own tracking
// variables (the run tag and the delegation chain). A pattern ending in
// "*" matches a prefix. The private HOME and XDG directories are not
// inherited: each adapter sets its own.
var Base = []string{
	"PATH",
	"LANG", "LANGUAGE", "LC_*",
	"TERM", "COLORTERM", "NO_COLOR",
	"TZ", "TMPDIR",
	"USER", "LOGNAME", "SHELL",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
	"http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
	"SCV_RUN_TAG", "SCV_PARENT", "SCV_DELEGATION_DEPTH",
}

// Match reports whether name matches pattern: an exact name, or a prefix
// when pattern ends in "*".
func Match(pattern, name string) bool {
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(name, p)
	}
	return name == pattern
}

// Allowed reports whether name matches Base or one of extra.
func Allowed(name string, extra ...string) bool {
	for _, list := range [][]string{Base, extra} {
		for _, p := range list {
			if Match(p, name) {
				return true
			}
		}
	}
	return false
}

// Filter returns the entries (KEY=value) of env whose name is Allowed
// with extra, in their order. Entries without "=" or with an empty name
// are dropped.
func Filter(env []string, extra ...string) []string {
	out := make([]string, 0, len(Base)+len(extra))
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if ok && name != "" && Allowed(name, extra...) {
			out = append(out, kv)
		}
	}
	return out
}

// Without returns env without the variables named in names (exact names;
// empty names are ignored).
func Without(env []string, names ...string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name != "" && slices.Contains(names, name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}
