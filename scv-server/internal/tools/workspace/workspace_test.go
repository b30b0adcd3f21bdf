package workspace

import (
	"path/filepath"
	"strings"
	"testing"
)

const ws = "/home/u/project"

func TestRel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
		// errHas is a substring of the error; empty means success.
		errHas string
	}{
		{"relative file", "main.go", "main.go", ""},
		{"relative nested", "src/pkg/a.go", "src/pkg/a.go", ""},
		{"dot", ".", ".", ""},
		{"dot slash", "./a", "a", ""},
		{"dot dot inside", "./a/../b", "b", ""},
		{"trailing slash", "src/", "src", ""},
		{"double slashes", "src//pkg///a.go", "src/pkg/a.go", ""},
		{"back to the workspace", "a/..", ".", ""},
		{"dotdot that stays inside", "a/b/../../c", "c", ""},
		{"dotfile", ".env", ".env", ""},
		{"name starting with dots", "..foo", "..foo", ""},
		{"name with dots inside", "a/..b/c", "a/..b/c", ""},
		{"unicode", "docs/résumé.md", "docs/résumé.md", ""},
		{"spaces", "my dir/a file.txt", "my dir/a file.txt", ""},
		{"absolute inside", ws + "/src/main.go", "src/main.go", ""},
		{"absolute inside, unclean", ws + "/src/../lib/./x.go", "lib/x.go", ""},
		{"absolute workspace itself", ws, ".", ""},
		{"absolute workspace with slash", ws + "/", ".", ""},
		{"absolute workspace via dotdot", ws + "/a/..", ".", ""},
		{"absolute outside", "/etc/passwd", "", "outside the workspace"},
		{"absolute parent", "/home/u", "", "outside the workspace"},
		{"absolute root", "/", "", "outside the workspace"},
		{"absolute sibling with common prefix", ws + "-other/x", "", "outside the workspace"},
		{"absolute sibling via dotdot", ws + "/../other/x", "", "outside the workspace"},
		{"dotdot", "..", "", "leaves the workspace"},
		{"dotdot slash", "../", "", "leaves the workspace"},
		{"dotdot file", "../x", "", "leaves the workspace"},
		{"climb out", "a/../../x", "", "leaves the workspace"},
		{"dot then climb", "./../x", "", "leaves the workspace"},
		{"deep climb", "a/b/../../../../etc/passwd", "", "leaves the workspace"},
		{"empty", "", "", "empty"},
		{"NUL byte", "a\x00b", "", "not a valid UTF-8 path"},
		{"NUL only", "\x00", "", "not a valid UTF-8 path"},
		{"invalid UTF-8", "a\xffb", "", "not a valid UTF-8 path"},
		{"truncated UTF-8", "caf\xc3", "", "not a valid UTF-8 path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Rel(ws, tc.in)
			if tc.errHas != "" {
				if err == nil {
					t.Fatalf("Rel(%q) = %q, want an error containing %q", tc.in, got, tc.errHas)
				}
				if !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("Rel(%q) error %q does not contain %q", tc.in, err, tc.errHas)
				}
				if got != "" {
					t.Fatalf("Rel(%q) returned %q with its error", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Rel(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("Rel(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestRelErrorsTellTheFix checks that refusals are written for the model:
// they say what to do instead.
func TestRelErrorsTellTheFix(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "../x", "/etc/passwd"} {
		_, err := Rel(ws, in)
		if err == nil {
			t.Fatalf("Rel(%q) succeeded", in)
		}
		if !strings.Contains(err.Error(), "give a path") {
			t.Errorf("Rel(%q) error %q does not say what to give instead", in, err)
		}
	}
}

func TestSecretLike(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path string
		want bool
	}{
		// .env files
		{".env", true},
		{".env.local", true},
		{".env.production", true},
		{"prod.env", true},
		{"config/.env", true},
		{"deploy/staging.env", true},
		{".ENV", true},
		// credential / private key names
		{"credentials", true},
		{"credentials.json", true},
		{"aws_credentials.txt", true},
		{"my-Credential-file", true},
		{"private_key", true},
		{"private_key.txt", true},
		{"server_private_key.der", true},
		{"privatekey.bin", true},
		// key and keystore extensions
		{"server.pem", true},
		{"certs/ca.PEM", true},
		{"tls.key", true},
		{"client.p12", true},
		{"client.pfx", true},
		{"passwords.kdbx", true},
		{"release.jks", true},
		{"app.keystore", true},
		// SSH key names
		{"id_ed25519", true},
		{"id_rsa", true},
		{"id_ecdsa", true},
		{"id_dsa", true},
		{"keys/id_ed25519_sk", true},
		{"id_rsa.pub", false},
		{"id_ed25519.pub", false},
		{"keys/id_ecdsa.pub", false},
		// anything under .ssh/, and other secret dirs
		{".ssh/config", true},
		{".ssh", true},
		{"home/.ssh", true},
		{".ssh/id_rsa.pub", true},
		{"a/.ssh/known_hosts", true},
		{"home/.SSH/anything", true},
		{".gnupg/pubring.kbx", true},
		{".aws/config", true},
		{"known_hosts", true},
		{"authorized_keys", true},
		// other well-known secret files
		{".git-credentials", true},
		{".netrc", true},
		{"_netrc", true},
		{".pgpass", true},
		{".npmrc", true},
		{".pypirc", true},
		{"sub/dir/.netrc", true},
		// ordinary files
		{"main.go", false},
		{"environment.md", false},
		{"keyboard.go", false},
		{"monkey.txt", false},
		{"README.md", false},
		{".", false},
		{"src/env.go", false},
		{"envrc", false},
		{".envrc", false},
		{"keys.go", false},
		{"key_test.go", false},
		{"docs/ssh.md", false},
		{"ssh/config", false},
		{"pem/README", false},
		{"signature.asc", false},
		{".gitignore", false},
		{"id_card.png", false},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			if got := SecretLike(tc.path); got != tc.want {
				t.Fatalf("SecretLike(%q) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
}

// TestSecretLikeAfterRel checks the two together, as the file tools use
// them: whatever spelling reaches a secret name, it is still secret-like.
func TestSecretLikeAfterRel(t *testing.T) {
	t.Parallel()
	for _, in := range []string{".env", "./.env", "a/../.env", ws + "/.env", ws + "/x/../.ssh/config", "./keys//id_rsa"} {
		rel, err := Rel(ws, in)
		if err != nil {
			t.Fatalf("Rel(%q): %v", in, err)
		}
		if !SecretLike(rel) {
			t.Errorf("SecretLike(Rel(%q) = %q) = false", in, rel)
		}
	}
}

func FuzzRel(f *testing.F) {
	for _, s := range []string{
		"", ".", "..", "../x", "a/../../x", "./a/../b", "a\x00b", "a\xffb",
		ws, ws + "/a", ws + "/../x", "/etc/passwd", "/", "a//b/", "..foo", "a/..",
		"résumé", "\\..\\x", "~/x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := Rel(ws, p)
		if err != nil {
			if got != "" {
				t.Fatalf("Rel(%q) returned %q with error %v", p, got, err)
			}
			return
		}
		if got == "" {
			t.Fatalf("Rel(%q) = \"\" without an error", p)
		}
		if got == ".." || strings.HasPrefix(got, "../") {
			t.Fatalf("Rel(%q) = %q leaves the workspace", p, got)
		}
		if filepath.IsAbs(got) || strings.HasPrefix(got, "/") {
			t.Fatalf("Rel(%q) = %q is absolute", p, got)
		}
		if strings.ContainsRune(got, 0) {
			t.Fatalf("Rel(%q) = %q contains NUL", p, got)
		}
		// The result is canonical: cleaning it again changes nothing, and
		// it resolves inside the workspace.
		if c := filepath.ToSlash(filepath.Clean(got)); c != got {
			t.Fatalf("Rel(%q) = %q is not clean (%q)", p, got, c)
		}
		joined := filepath.Join(ws, got)
		if joined != ws && !strings.HasPrefix(joined, ws+"/") {
			t.Fatalf("Rel(%q) = %q joins to %q, outside %q", p, got, joined, ws)
		}
		// Rel is idempotent on its own output.
		again, err := Rel(ws, got)
		if err != nil || again != got {
			t.Fatalf("Rel(Rel(%q)) = %q, %v; want %q", p, again, err, got)
		}
		// SecretLike never panics on what Rel accepts.
		_ = SecretLike(got)
	})
}
