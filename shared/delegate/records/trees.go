package records

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/proctag"
	"github.com/scv-cli/scv/shared/statefile"
)

// TreesDirName is the directory of the process-tree records in the state
// directory.
const TreesDirName = "trees"

// TreesDir returns the directory of the process-tree records:
// home/state/trees.
func TreesDir(home string) string { return filepath.Join(paths.StateDir(home), TreesDirName) }

// Tree records one tagged process tree that an SCV process runs (a bash
// command): the tag every process of the tree carries in proctag.Var, and
// the owner. When the owner is gone (a server killed with SIGKILL), the
// tree is an orphan, and Reconcile kills it, like an orphaned delegation.
type Tree struct {
	Tag   string  `json:"tag"`
	Owner Process `json:"owner"`
	// What says what runs, for the log ("bash").
	What string `json:"what"`
}

// WriteTree records that owner runs the tree tagged tag in dir (TreesDir),
// atomically with mode 0600. Write it before the tree starts, so no moment
// exists when an owner's SIGKILL leaves a tree nobody knows. It is not
// fsynced (a bash call's hot path): a record outlives its owner's SIGKILL
// in the page cache, and a machine crash, which could lose it, ends the
// tree it describes too.
func WriteTree(dir string, t Tree) error {
	if err := CheckName("process tree tag", t.Tag); err != nil {
		return fmt.Errorf("cannot record the process tree: %w", err)
	}
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := paths.EnsureDir(dir); err != nil {
		return fmt.Errorf("cannot record the process tree: %w", err)
	}
	if err := atomicfile.WriteFileNoSync(filepath.Join(dir, t.Tag+".json"), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("cannot record process tree %s: %w", t.Tag, err)
	}
	return nil
}

// RemoveTree removes the record of the tree tagged tag; a missing one is
// not an error.
func RemoveTree(dir, tag string) error {
	if err := CheckName("process tree tag", tag); err != nil {
		return fmt.Errorf("cannot remove the process tree record: %w", err)
	}
	if err := os.Remove(filepath.Join(dir, tag+".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove the record of process tree %s: %w", tag, err)
	}
	return nil
}

// Trees returns the readable tree records of dir. Unreadable ones are
// reported in err (errors.Join) and skipped.
func Trees(dir string) ([]Tree, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot list the process tree records: %w", err)
	}
	var out []Tree
	var errs []error
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, atomicfile.TempPrefix) {
			continue
		}
		// As every state file: no symbolic link, nothing but a regular
		// file, bounded (the listing's type can be stale by now).
		data, err := statefile.ReadFile(dir, name, maxRecordBytes, statefile.NoLinks)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var t Tree
		if err := json.Unmarshal(data, &t); err != nil || t.Tag+".json" != name || t.Owner.PID <= 0 {
			errs = append(errs, fmt.Errorf("process tree record %s is not valid; remove it by hand once its processes are gone (%v)", filepath.Join(dir, name), err))
			continue
		}
		out = append(out, t)
	}
	return out, errors.Join(errs...)
}

// treeGrace is how long an orphaned tree gets after SIGTERM.
const treeGrace = 2 * time.Second

// reapTrees kills the trees of dir whose owner is gone and removes their
// records. It returns how many trees it reaped and what it could not do.
func reapTrees(dir string, log func(msg string, args ...any)) (int, error) {
	trees, err := Trees(dir)
	errs := []error{err}
	n := 0
	for _, t := range trees {
		if t.Owner.Alive() {
			continue
		}
		killed, survivors := proctag.Stop(t.Tag, treeGrace)
		if survivors > 0 {
			errs = append(errs, fmt.Errorf("orphaned process tree %s: %d tagged processes survived SIGKILL; its record is kept for the next pass", t.Tag, survivors))
			continue
		}
		if err := RemoveTree(dir, t.Tag); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
		log("stopped an orphaned process tree", "tag", t.Tag, "what", t.What, "owner_pid", t.Owner.PID, "killed", killed)
	}
	return n, errors.Join(errs...)
}
