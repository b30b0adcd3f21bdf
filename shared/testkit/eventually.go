package testkit

import (
	"testing"
	"time"
)

// Eventually polls cond every 10 ms until it holds, failing the test with
// "timed out waiting for <what>" when d passes first. Tests wait on a
// state rather than sleep for a guessed time.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
