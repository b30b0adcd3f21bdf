package records

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/scv-cli/scv/shared/proctag"
	"github.com/scv-cli/scv/shared/statefile"
)

// startTagged starts a detached process tree (a shell and its sleep, in a
// session of their own, as a killed server leaves them) carrying tag, and
// returns the shell's pid; the test reaps it either way.
func startTagged(t *testing.T, tag string) int {
	t.Helper()
	c := exec.Command("sh", "-c", "sleep 300 & wait")
	c.Env = append(os.Environ(), proctag.Var+"="+tag)
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		proctag.Kill(tag)
		_ = c.Wait()
	})
	// Wait for the sleep too: the tree is whole only once it forked.
	for range 500 {
		if len(proctag.Find(tag)) >= 2 {
			break
		}
		syscall.Nanosleep(&syscall.Timespec{Nsec: 10e6}, nil)
	}
	return c.Process.Pid
}

// TestReconcileReapsOrphanedTrees: the tree of a bash command whose owner
// was killed (its record names a process that is gone) is stopped, every
// tagged process of it, and its record removed; a tree whose owner runs is
// left alone with its record; a corrupt record is reported, not deleted.
func TestReconcileReapsOrphanedTrees(t *testing.T) {
	linuxOnly(t)
	t.Parallel()
	home := t.TempDir()
	dir := TreesDir(home)
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	orphanTag, liveTag := "orphan-"+filepath.Base(home), "live-"+filepath.Base(home)
	orphan := startTagged(t, orphanTag)
	live := startTagged(t, liveTag)
	if err := WriteTree(dir, Tree{Tag: orphanTag, Owner: deadProcess(t), What: "bash"}); err != nil {
		t.Fatal(err)
	}
	if err := WriteTree(dir, Tree{Tag: liveTag, Owner: self, What: "bash"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "junk.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, orphanTag+".json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("tree record: %v, %v", fi, err)
	}

	stopped, err := Reconcile(context.Background(), home, nil)
	if stopped != 1 {
		t.Fatalf("stopped %d, want the one orphaned tree", stopped)
	}
	if err == nil || !strings.Contains(err.Error(), "junk.json is not valid") {
		t.Fatalf("the corrupt record was not reported: %v", err)
	}
	waitGone(t, orphan)
	if n := len(proctag.Find(orphanTag)); n != 0 {
		t.Fatalf("%d processes of the orphaned tree survive", n)
	}
	if processGone(live) || len(proctag.Find(liveTag)) < 2 {
		t.Fatal("the tree of a live owner was stopped")
	}
	trees, _ := Trees(dir)
	if len(trees) != 1 || trees[0].Tag != liveTag {
		t.Fatalf("records left: %+v", trees)
	}
	if _, err := os.Stat(filepath.Join(dir, "junk.json")); err != nil {
		t.Fatalf("the corrupt record was deleted: %v", err)
	}
	if err := RemoveTree(dir, liveTag); err != nil {
		t.Fatal(err)
	}
	if err := RemoveTree(dir, liveTag); err != nil {
		t.Fatalf("removing a missing record: %v", err)
	}
	if err := WriteTree(dir, Tree{Tag: "../x", Owner: self}); err == nil {
		t.Fatal("a tag that is no file name was recorded")
	}
}

// TestTreesReadsBoundedRecords: a tree record larger than any record is
// refused by its size, not read whole into memory, and the others are
// still listed (issue 14, item 20: every state file is read bounded).
func TestTreesReadsBoundedRecords(t *testing.T) {
	t.Parallel()
	dir := TreesDir(t.TempDir())
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteTree(dir, Tree{Tag: "ok", Owner: self, What: "bash"}); err != nil {
		t.Fatal(err)
	}
	// Valid JSON, padded past the bound with white space, so only the
	// bound can refuse it.
	big := append([]byte(`{"tag":"big","owner":{"pid":1},"what":"bash"}`), bytes.Repeat([]byte(" "), maxRecordBytes)...)
	if err := os.WriteFile(filepath.Join(dir, "big.json"), big, 0o600); err != nil {
		t.Fatal(err)
	}
	trees, err := Trees(dir)
	var tl *statefile.TooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("the oversized record was read: %v", err)
	}
	if len(trees) != 1 || trees[0].Tag != "ok" {
		t.Fatalf("trees = %+v", trees)
	}
}
