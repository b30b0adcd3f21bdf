// Package transport holds what every transport of delegated agents
// (oneshot, acp, and the nested SCV's) is configured with and builds the
// same way: the runner Options, the agent's environment for a call, and
// the Descriptor an adapter gives the `agent` tool. Each transport is a
// subpackage that implements delegate.Backend.
package transport

import (
	"log/slog"
	"os"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/paths"
)

// Options configure a transport's Runner.
type Options struct {
	// Home is SCV_HOME (absolute): private homes go under Home/agents,
	// records under Home/state.
	Home string
	// Env is the server's environment for finding executables (HOME and
	// PATH); nil is the process environment.
	Env paths.Env
	// BaseEnv is the environment a delegated agent inherits before the
	// scrub (KEY=value); nil is the process environment at each run.
	BaseEnv []string
	// Permissions maps an agent to "full" for permissions = "full".
	Permissions map[string]string
	// OutputLimit bounds a reply (tools.output_limit_bytes); 0 uses
	// output.DefaultLimit.
	OutputLimit int
	// Instance names this SCV instance in SCV_PARENT; empty is Home.
	Instance string
	// Adapters replaces the adapter table (tests run fake agents with
	// it); nil is adapters.All().
	Adapters []adapters.Adapter
	// Logger receives warnings (a record that could not be written);
	// nil discards.
	Logger *slog.Logger
	// Idle, when above zero, shuts down a live agent (an ACP server) that
	// has waited this long between turns (agent.conversation_idle_seconds),
	// without waiting for the next call to expire its conversation.
	Idle time.Duration
}

// FullPermissions reports whether the user set permissions = "full" for
// the agent name.
func (o Options) FullPermissions(name string) bool { return o.Permissions[name] == "full" }

// AgentEnv returns the environment of a's process for call: a's private
// environment built from BaseEnv, then extra (the transport's
// full-permissions variables and the like), then the delegation chain
// (SCV_PARENT with this instance, session and handle; the depth).
func (o Options) AgentEnv(a adapters.Adapter, call delegate.Call, extra ...string) ([]string, error) {
	base := o.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	env, err := a.PrivateEnv(base, o.Home)
	if err != nil {
		return nil, err
	}
	env = append(env, extra...)
	instance := o.Instance
	if instance == "" {
		instance = o.Home
	}
	self := instance + "/" + call.SessionID + "/" + call.Handle
	return delegate.ChainEnv(env, self, call.Depth), nil
}

// Descriptor is what the `agent` tool knows of a's agent; takesSession
// says whether this transport lets it continue a conversation.
func Descriptor(a adapters.Adapter, takesSession bool) delegate.Descriptor {
	return delegate.Descriptor{
		Name:         a.Name,
		Product:      a.Product,
		Summary:      a.Summary,
		ModelFamily:  a.ModelFamily,
		TakesModel:   a.TakesModel(),
		TakesEffort:  a.TakesEffort(),
		TakesSession: takesSession,
	}
}
