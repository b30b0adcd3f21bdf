// Package tools is the tool extension contract: a Tool has a unique name, a
// description, a JSON Schema for its arguments, and Prepare, which checks a
// call and returns its declared risk, approval summary and executor. The
// agent loop runs every tool through the same path (validate, prepare,
// approve, run) and has no name-specific code.
//
// Built-in tools live in subpackages, one per tool.
package tools

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/scv-cli/scv/shared/protocol"
)

// Spec describes a tool to the model.
type Spec struct {
	Name        string
	Description string
	// Schema is the JSON Schema of the arguments object.
	Schema json.RawMessage
}

// Env is what a call receives from the server.
type Env struct {
	// Workspace is the canonical absolute workspace directory.
	Workspace string
	// Root is the workspace opened as a capability-contained root; every
	// file access goes through it.
	Root *os.Root
	// Timeout is the call's default time limit.
	Timeout time.Duration
	// MaxTimeout is the ceiling a call may ask for.
	MaxTimeout time.Duration
	// OutputLimit bounds the output returned to the model, in bytes.
	OutputLimit int
	// Progress reports one progress line of a running call (tool.progress);
	// it may be nil.
	Progress func(line string)
	// TurnID is the turn the call belongs to (a tool that bounds what one
	// reply carries, such as chat_attach, counts per turn).
	TurnID string
	// Approve relays an approval request of something the call runs for
	// the session (a nested SCV's tool call, an ACP agent's
	// session/request_permission) through the session's
	// approval gate, as approval.requested under the call's id: the
	// policy, auto-approval and the user decide as for the session's own
	// calls. It reports whether the request was approved; ctx ending
	// denies it. nil (no gate) means every relayed request is denied.
	Approve func(ctx context.Context, risk protocol.Risk, summary string) bool
	// StateDir is the session's private state directory under SCV_HOME
	// (state/sessions/<session id>). It may not exist yet: a tool that
	// writes there creates it with mode 0700. Empty when the server keeps
	// no state.
	StateDir string
}

// SpillDir is the directory, inside a session's StateDir, where tools keep
// what did not fit their result (the bash tool's truncated outputs, in
// full). The read tool opens the files directly in it by their absolute
// path: the one place outside the workspace it reads.
const SpillDir = "spill"

// Result is the outcome of a call, read by the model.
type Result struct {
	Success   bool
	Output    string
	Truncated bool
	// Jobs are background jobs the call started.
	Jobs []string
	// Settled are background jobs whose final result this call gave the
	// model, so that no report turn will name them.
	Settled []string
}

// Plan is a checked call, ready for approval and execution.
type Plan struct {
	Risk    protocol.Risk
	Summary string
	// Rule is the session approval rule the tool proposes for this call:
	// what approving it "for the session" (protocol v3) allows from then
	// on. Nil when the call can only be approved once. Its Key must be one
	// of Keys, so a granted rule covers the call it was granted for.
	Rule *Rule
	// Wider is a broader rule the user may grant instead (protocol v4:
	// approval.requested's wider_rule, granted by scope
	// "session_wider"), such as every tool of one MCP server. Nil when
	// there is none. Its Key must be one of Keys too.
	Wider *Rule
	// Keys are the keys of every rule that covers this call, most specific
	// first. A call the policy would ask about runs without asking when
	// one of its keys is the key of a rule the session granted. Keys share
	// one namespace across tools ("bash:", "fs:"); a tool uses only its
	// own family's. Empty: no rule covers the call, it always asks.
	Keys []string
	// Preview is the change the call would make as a bounded unified diff
	// (write and edit), shown with the approval request; empty for other
	// calls.
	Preview string
	// Run executes the call. It must return when ctx is cancelled. A
	// failure the model should read is a Result with Success false; an
	// error means the infrastructure broke.
	Run func(ctx context.Context) (Result, error)
}

// Rule is a session approval rule a tool proposes. The tool it is for is
// the tool that proposed it.
type Rule struct {
	// Key identifies the rule, such as "bash:go test" or "fs:src/".
	Key string
	// Description says in words what the rule allows, for the user.
	Description string
}

// Warmer is a tool that can get ready for its calls ahead of them. The
// loop calls Warm when one of its calls waits for the user's approval, so
// what a first call would otherwise pay for (bash: running the login
// profile for the session's snapshot) happens while the user reads. Warm
// returns when it is done or ctx ends; it must be safe beside the tool's
// calls, cheap when there is nothing to do, and leave nothing a call
// depends on half done when ctx ends.
type Warmer interface {
	Warm(ctx context.Context, env Env)
}

// Tool is one tool the model can call.
type Tool interface {
	Spec() Spec
	// Prepare checks args, which already match the schema, beyond what the
	// schema says. An error is a refusal the model reads; nothing runs and
	// no approval is asked.
	Prepare(env Env, args json.RawMessage) (*Plan, error)
}

// Failed returns a failed result with a message for the model.
func Failed(msg string) Result { return Result{Success: false, Output: msg} }
