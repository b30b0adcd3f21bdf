package workspace

import (
	"path"
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/tools"
)

// Session approval rules of write and edit (protocol v3). A rule allows
// writes and edits of files in one directory and below it: "fs:src/"
// covers src/main.go and src/a/b.go, not docs/x.md; "fs:./" is the whole
// workspace. The rule proposed for a file is its directory's, and the keys
// of a file are its directory and every ancestor up to the workspace root.
// write and edit share the rules: approving a write under src/ for the
// session also lets edits there run.
//
// The path used is the file a call changes: the resolved path, so a
// symlink under src/ that leads to config/ is covered by config/'s rules,
// not src/'s. Protected files get no rule and no key, so they ask every
// time: names that look like secrets (SecretLike), and anything under a
// .git or .scv directory (git hooks run code; .scv holds the project's
// configuration).

// RootRuleKey is the key of the rule that covers the whole workspace.
const RootRuleKey = "fs:./"

// protectedDirs are directory names under which no rule applies.
var protectedDirs = map[string]bool{".git": true, ".scv": true}

// Protected reports whether a write to the workspace-relative path rel
// must ask every time.
func Protected(rel string) bool {
	if SecretLike(rel) {
		return true
	}
	parts := strings.Split(path.Clean(rel), "/")
	for _, dir := range parts[:len(parts)-1] {
		if protectedDirs[strings.ToLower(dir)] {
			return true
		}
	}
	return false
}

// WriteRule returns the session rule for changing the file at the
// workspace-relative path rel, which resolves to real (see Resolve), and
// the keys of the rules that cover it. A protected rel or real gets
// neither.
func WriteRule(rel, real string) (*tools.Rule, []string) {
	if Protected(rel) || Protected(real) {
		return nil, nil
	}
	dir := path.Dir(path.Clean(real))
	var keys []string
	for d := dir; ; d = path.Dir(d) {
		keys = append(keys, dirKey(d))
		if d == "." || d == "/" {
			break
		}
	}
	return &tools.Rule{Key: dirKey(dir), Description: describeDir(dir)}, keys
}

func dirKey(dir string) string {
	if dir == "." {
		return RootRuleKey
	}
	return "fs:" + dir + "/"
}

func describeDir(dir string) string {
	if dir == "." {
		return "writes and edits anywhere in the workspace (write, edit)"
	}
	return "writes and edits under " + dir + "/ (write, edit)"
}
