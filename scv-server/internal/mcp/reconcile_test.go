package mcp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/config"
)

// pids are the pids the helper server wrote to file, one per start.
func pids(t testing.TB, file string) []int {
	t.Helper()
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file %s: %v", file, err)
		}
		out = append(out, n)
	}
	return out
}

// alive reports whether process pid exists.
func alive(pid int) bool { return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// pidServer is the helper server writing its pids to a file of its own.
func pidServer(t testing.TB) (config.MCPServer, string) {
	c := goStdio(t)
	file := filepath.Join(t.TempDir(), "pids")
	c.Env[pidFileVar] = file
	return c, file
}

func statusOf(m *Manager, name string) (Status, bool) {
	for _, st := range m.Statuses() {
		if st.Name == name {
			return st, true
		}
	}
	return Status{}, false
}

func names(m *Manager) []string {
	var out []string
	for _, st := range m.Statuses() {
		out = append(out, st.Name)
	}
	return out
}

// TestReconcile: a Manager with no server gains one, keeps it running
// through a reconcile with the same settings, starts it again (after the
// old process is gone) when a setting changes, leaves it alone while
// another server is added disabled then enabled, and stops it when it is
// removed; each change moves the generation, a no-op does not.
func TestReconcile(t *testing.T) {
	t.Parallel()
	m := start(t, Options{})
	if m.Len() != 0 || m.Servers() != nil || len(m.Tools()) != 0 {
		t.Fatalf("empty manager: %+v", m.Statuses())
	}
	a, aPids := pidServer(t)
	gen := m.Generation()
	m.Reconcile(map[string]config.MCPServer{"a": a})
	if m.Generation() == gen {
		t.Error("adding a server did not change the generation")
	}
	settle(t, m)
	if st, _ := statusOf(m, "a"); st.State != StateReady {
		t.Fatalf("a after it was added: %+v", st)
	}
	env := tools.Env{OutputLimit: 4096}
	if _, res, _ := call(t, context.Background(), m, "mcp__a__echo", `{"message":"one"}`, env); res.Output != "echo: one" {
		t.Fatalf("echo of the added server: %+v", res)
	}
	first := pids(t, aPids)

	// The same settings (another map, equal values): nothing moves.
	same := a
	same.Env = maps.Clone(a.Env)
	gen = m.Generation()
	m.Reconcile(map[string]config.MCPServer{"a": same})
	if m.Generation() != gen || len(pids(t, aPids)) != 1 {
		t.Fatalf("a reconcile without change moved something: gen %d→%d, pids %v", gen, m.Generation(), pids(t, aPids))
	}

	// A changed setting: stopped, then started again with it.
	changed := same
	changed.ToolTimeoutSeconds = 7
	oldTool := find(t, m, "mcp__a__echo").Tool
	m.Reconcile(map[string]config.MCPServer{"a": changed})
	settle(t, m)
	got := pids(t, aPids)
	if st, _ := statusOf(m, "a"); st.State != StateReady || len(got) != 2 || alive(first[0]) {
		t.Fatalf("a after its settings changed: %+v, pids %v (the first alive: %v)", st, got, alive(first[0]))
	}
	if _, res, _ := call(t, context.Background(), m, "mcp__a__echo", `{"message":"two"}`, env); res.Output != "echo: two" {
		t.Fatalf("echo of the restarted server: %+v", res)
	}
	plan, err := oldTool.Prepare(env, []byte(`{"message":"old"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := plan.Run(context.Background()); res.Success || !strings.Contains(res.Output, "MCP server a is not running (stopped)") {
		t.Errorf("a call decided before the restart: %+v", res)
	}

	// Another server, first disabled, then enabled: a keeps running.
	b, bPids := pidServer(t)
	b.Enabled = false
	m.Reconcile(map[string]config.MCPServer{"a": changed, "b": b})
	if st, _ := statusOf(m, "b"); st.State != StateDisabled || pids(t, bPids) != nil {
		t.Fatalf("b added disabled: %+v", st)
	}
	b.Enabled = true
	m.Reconcile(map[string]config.MCPServer{"a": changed, "b": b})
	settle(t, m)
	if st, _ := statusOf(m, "b"); st.State != StateReady || len(pids(t, aPids)) != 2 {
		t.Fatalf("b enabled: %+v; a's pids %v", st, pids(t, aPids))
	}

	// a removed: stopped, its tools gone, b untouched.
	second := pids(t, aPids)[1]
	m.Reconcile(map[string]config.MCPServer{"b": b})
	if got := names(m); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("servers after a was removed: %v", got)
	}
	for _, tl := range m.Tools() {
		if strings.HasPrefix(tl.Spec.Name, "mcp__a__") {
			t.Fatalf("a's tool %s is still offered", tl.Spec.Name)
		}
	}
	waitFor(t, func() bool { return !alive(second) }, "a's process stopped")
	if st, _ := statusOf(m, "b"); st.State != StateReady || len(pids(t, bPids)) != 1 {
		t.Fatalf("b after a was removed: %+v", st)
	}
}

// TestReconcileBeforeStartAndAfterClose: before Start, Reconcile only
// changes what Start starts; after Close it does nothing (goleak, in
// TestMain, sees no goroutine left).
func TestReconcileBeforeStartAndAfterClose(t *testing.T) {
	t.Parallel()
	a, aPids := pidServer(t)
	m := New(Options{Servers: map[string]config.MCPServer{"gone": stdioServer("/nonexistent/mcp-server")}})
	m.Reconcile(map[string]config.MCPServer{"a": a})
	if got := names(m); !slices.Equal(got, []string{"a"}) || pids(t, aPids) != nil {
		t.Fatalf("before Start: %v, pids %v", got, pids(t, aPids))
	}
	m.Start(context.Background())
	settle(t, m)
	if st, _ := statusOf(m, "a"); st.State != StateReady {
		t.Fatalf("a after Start: %+v", st)
	}
	m.Close()
	b, bPids := pidServer(t)
	m.Reconcile(map[string]config.MCPServer{"a": a, "b": b})
	m.Close()
	if pids(t, bPids) != nil {
		t.Fatal("a server added after Close was started")
	}
}

// TestReconcileConcurrent: reconciliations from many goroutines (App
// Server turns of several threads) with differing configurations leave
// the Manager running exactly the last one, and Close stops everything.
func TestReconcileConcurrent(t *testing.T) {
	t.Parallel()
	m := start(t, Options{})
	srv := goStdio(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			cfg := map[string]config.MCPServer{}
			for j := range i % 3 {
				cfg[fmt.Sprintf("s%d", j)] = srv
			}
			m.Reconcile(cfg)
			_ = m.Tools()
			_ = m.Statuses()
		})
	}
	wg.Wait()
	m.Reconcile(map[string]config.MCPServer{"s0": srv, "s1": srv})
	settle(t, m)
	if got := names(m); !slices.Equal(got, []string{"s0", "s1"}) {
		t.Fatalf("servers: %v", got)
	}
	for _, st := range m.Statuses() {
		if st.State != StateReady {
			t.Errorf("%+v", st)
		}
	}
}
