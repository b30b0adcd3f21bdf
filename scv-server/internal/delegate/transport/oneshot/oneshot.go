// Package oneshot is the one-process-per-turn transport of delegated
// agents, a delegate.Backend per agent: each call starts the agent's CLI
// once (shared/delegate/adapters describes the command line and
// environment), under procgroup's process rules, with the run's delegation
// handle as its process tag; it reads stdout as it arrives through
// delegate/output, keeps a bounded stderr tail, records the run in
// $SCV_HOME/state/delegations while it lasts, and returns the structured
// result (tools.md, "Results"). The ACP transport (delegate/transport/acp)
// and the nested SCV's are sibling packages.
//
// The Runner (this file) makes one backend per adapter and says which are
// offered; backend.go plans a launch, run.go runs it.
package oneshot

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/transport"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/delegate/signin"
	"github.com/scv-cli/scv/shared/paths"
)

// StopGrace is how long a cancelled run gets between TERM and KILL.
const StopGrace = 2 * time.Second

// StderrTail is how much of stderr a result keeps.
const StderrTail = 2 << 10

// maxError bounds a result's error text.
const maxError = 2 << 10

// ErrUnavailable is wrapped by Plan's error when the agent cannot run at
// all (its executable is missing): the `agent` tool then adds the
// fallback sentence, as for an unavailable result.
var ErrUnavailable = delegate.ErrUnavailable

// Options configure a Runner (every transport takes the same).
type Options = transport.Options

// Runner starts delegated agent CLIs, one process per turn.
type Runner struct {
	opts  Options
	table []adapters.Adapter
	// backends are made once, one per adapter, so Plan and Run of a call
	// meet on the same backend whichever way it was obtained.
	backends []*backend
	log      *slog.Logger
}

// New returns a Runner.
func New(opts Options) *Runner {
	r := &Runner{opts: opts, table: opts.Adapters, log: opts.Logger}
	if r.table == nil {
		r.table = adapters.All()
	}
	if r.opts.Env == nil {
		r.opts.Env = paths.OSEnv()
	}
	if r.opts.Instance == "" {
		r.opts.Instance = opts.Home
	}
	if r.log == nil {
		r.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for _, a := range r.table {
		r.backends = append(r.backends, &backend{r: r, a: a})
	}
	return r
}

// Backend returns the backend of the agent name, whether or not it is
// installed (Plan reports a missing executable).
func (r *Runner) Backend(name string) (delegate.Backend, bool) {
	for _, b := range r.backends {
		if b.a.Name == name {
			return b, true
		}
	}
	return nil, false
}

// Offered returns the backends a session starting now offers, in adapter
// order: the agents whose executable resolves in env (nil: the runner's
// Env), minus those whose sign-in SCV checks from a file and finds signed
// out (signin.Check).
func (r *Runner) Offered(env paths.Env) []delegate.Backend {
	if env == nil {
		env = r.opts.Env
	}
	var out []delegate.Backend
	for _, b := range r.backends {
		if _, err := b.a.Lookup(env); err != nil {
			continue
		}
		if st := signin.Check(r.opts.Home, b.a.Name, env); st.Checked && !st.SignedIn {
			continue
		}
		out = append(out, b)
	}
	return out
}

// InstanceID returns a short stable id of an SCV home, for callers that
// want SCV_PARENT without the home's path (Options.Instance).
func InstanceID(home string) string {
	sum := sha256.Sum256([]byte(home))
	return "scv-" + hex.EncodeToString(sum[:6])
}

// Names returns the names of the runner's adapters, in offer order.
func (r *Runner) Names() []string {
	names := make([]string, len(r.backends))
	for i, b := range r.backends {
		names[i] = b.a.Name
	}
	return names
}
