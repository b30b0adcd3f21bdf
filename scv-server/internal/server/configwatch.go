package server

import (
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
)

// configWatch follows the user's configuration file for what a running
// server can apply without a restart: its MCP servers. At each turn's
// start (session.Options.BeforeTurn) one stat says whether the file
// changed since it was last read; only then is it loaded again, and the
// MCP servers are reconciled with it (added ones start, changed ones start
// again, removed ones stop: mcp.Manager.Reconcile). So `scv mcp add` while
// the daemon (or a TUI's server) runs takes effect at the next prompt.
// Everything else in the file still applies at the next start.
type configWatch struct {
	home      string
	env       paths.Env
	reconcile func(map[string]config.MCPServer)
	log       *slog.Logger

	mu   sync.Mutex
	last fileStamp // guarded by mu: the file as it was last read
}

// fileStamp identifies one version of a file: a rewrite (an atomic
// replace makes a new inode) or an edit in place changes it.
type fileStamp struct {
	ino, size int64
	mtime     time.Time
	missing   bool
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path) // a linked config.toml is followed, as Load does
	if err != nil {
		return fileStamp{missing: true}
	}
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = int64(sys.Ino)
	}
	return st
}

// newConfigWatch starts from the file as it is now; the caller loads it
// after this, so a change in between is seen by the first check.
func newConfigWatch(home string, env paths.Env, reconcile func(map[string]config.MCPServer), log *slog.Logger) *configWatch {
	return &configWatch{home: home, env: env, reconcile: reconcile, log: log, last: stampOf(paths.ConfigFile(home))}
}

// check applies a changed configuration file's MCP servers. A file that
// no longer loads changes nothing: the servers stay as they were, and the
// log says why (once per version of the file).
func (w *configWatch) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := stampOf(paths.ConfigFile(w.home))
	if now == w.last {
		return
	}
	w.last = now
	cfg, _, err := config.Load(config.LoadOptions{Home: w.home, Env: w.env})
	if err != nil {
		w.log.Warn("The configuration file changed and no longer loads; the MCP servers stay as they were until it is fixed", "err", err)
		return
	}
	w.reconcile(cfg.MCPServers)
}
