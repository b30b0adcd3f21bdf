// Package workspace holds what every file tool needs: turning the path a
// model sends into a path inside the workspace root, recognizing paths
// whose names look like secrets, writing files atomically through the root
// (write.go) and line diffs (diff.go).
//
// Containment itself is enforced by os.Root, opened on the workspace: the
// checks here only give clear errors early and keep paths canonical.
package workspace

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Rel turns p, relative to the workspace or absolute inside it, into a
// clean slash-separated path relative to the workspace ("." for the
// workspace itself). It refuses paths that leave the workspace lexically;
// symlinks that lead out are refused by os.Root when the path is opened.
func Rel(ws, p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("path is empty: give a path relative to the workspace")
	}
	if !utf8.ValidString(p) || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q is not a valid UTF-8 path", p)
	}
	if filepath.IsAbs(p) {
		r, err := filepath.Rel(ws, filepath.Clean(p))
		if err != nil || r == ".." || strings.HasPrefix(r, "../") {
			return "", fmt.Errorf("path %s is outside the workspace %s: give a path inside it", p, ws)
		}
		p = r
	}
	clean := path.Clean(filepath.ToSlash(p))
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("path %s leaves the workspace: give a path inside it", p)
	}
	return clean, nil
}

// secretNames are base names that are secrets whatever their extension.
var secretNames = map[string]bool{
	".netrc": true, "_netrc": true, ".git-credentials": true, ".pgpass": true,
	"id_rsa": true, "id_dsa": true, "id_ecdsa": true, "id_ed25519": true,
	"id_ecdsa_sk": true, "id_ed25519_sk": true, "authorized_keys": true,
	"known_hosts": true, ".npmrc": true, ".pypirc": true, "credentials": true,
}

var secretExts = map[string]bool{
	".pem": true, ".key": true, ".p12": true, ".pfx": true, ".kdbx": true,
	".jks": true, ".keystore": true, ".asc": false,
}

// secretDirs are directory names whose contents are secret.
var secretDirs = map[string]bool{".ssh": true, ".gnupg": true, ".aws": true}

// SecretLike reports whether the workspace-relative path p has a name that
// looks like a secret: .env files, names containing "credential" or
// "private_key", key and keystore extensions, SSH key names, and anything
// under .ssh/. It is a visibility heuristic, not a confidentiality
// boundary.
func SecretLike(p string) bool {
	p = filepath.ToSlash(p)
	parts := strings.Split(p, "/")
	for _, dir := range parts {
		if secretDirs[strings.ToLower(dir)] {
			return true
		}
	}
	base := strings.ToLower(parts[len(parts)-1])
	if base == ".env" || strings.HasPrefix(base, ".env.") || strings.HasSuffix(base, ".env") {
		return true
	}
	if strings.Contains(base, "credential") || strings.Contains(base, "private_key") || strings.Contains(base, "privatekey") {
		return true
	}
	if secretNames[base] {
		return true
	}
	if strings.HasPrefix(base, "id_") && strings.HasSuffix(base, ".pub") {
		return false
	}
	return secretExts[path.Ext(base)]
}

// OpenFile opens the workspace-relative path rel through root. os.Root
// refuses every symlink with an absolute target, even one that points back
// inside the workspace; such a path is resolved once and, when it lands
// inside ws, opened through root by its resolved path, so containment is
// still enforced by root itself.
func OpenFile(root *os.Root, ws, rel string, flag int) (*os.File, error) {
	f, err := root.OpenFile(rel, flag, 0)
	if err == nil || !escapes(err) {
		return f, err
	}
	real, rerr := filepath.EvalSymlinks(filepath.Join(ws, filepath.FromSlash(rel)))
	if rerr != nil {
		return nil, err
	}
	inside, rerr := Rel(ws, real)
	if rerr != nil {
		return nil, err
	}
	return root.OpenFile(inside, flag, 0)
}

// escapes reports whether err is os.Root's refusal of a path that leaves
// the root.
func escapes(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// Escapes reports whether err is a refusal of a path that leads outside
// the workspace.
func Escapes(err error) bool { return escapes(err) }
