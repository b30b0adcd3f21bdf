// Package proctag finds and stops the processes of one delegated or tool
// run by the tag in their environment. Every process SCV starts for a run
// carries Var, a comma-separated list of run tags, and its descendants
// inherit it, including those that leave the process group with setsid;
// scanning /proc for the tag is how those escapees are found after the
// group is gone. It lives in shared so that both the server (procgroup,
// the orphan reconcile) and `scv agents kill` use one implementation.
package proctag

import (
	"bytes"
	"strings"
)

// Var is the environment variable that marks every process of a run. Its
// value is a comma-separated list of tags, innermost run first.
const Var = "SCV_RUN_TAG"

// EnvironHasTag reports whether a NUL-separated environment block (as in
// /proc/<pid>/environ) holds Var with tag in its comma-separated list.
func EnvironHasTag(env []byte, tag string) bool {
	if tag == "" || !bytes.Contains(env, []byte(tag)) {
		return false
	}
	prefix := []byte(Var + "=")
	for len(env) > 0 {
		entry := env
		if i := bytes.IndexByte(env, 0); i >= 0 {
			entry, env = env[:i], env[i+1:]
		} else {
			env = nil
		}
		if v, ok := bytes.CutPrefix(entry, prefix); ok {
			for _, t := range strings.Split(string(v), ",") {
				if t == tag {
					return true
				}
			}
		}
	}
	return false
}
