// Package delegate holds the vocabulary shared by the delegated-agent
// feature: the descriptor of an agent CLI (what the `agent` tool offers and
// checks), a checked call, its structured result, the Backend interface
// that runs a call, and the variables of the delegation chain. The `agent`
// tool (delegate/agenttool) chooses an agent, checks the call against its
// descriptor and hands it to the agent's Backend, so the model sees one
// schema however the agent runs. A transport implements Backend: one
// process per turn (delegate/transport/oneshot), one ACP server per
// conversation (delegate/transport/acp), and the nested SCV's, packages
// of delegate/transport. The adapter table, the
// sign-in files and the delegation records are in shared/delegate, where
// the other binaries read them too.
package delegate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/protocol"
)

// Agent names known to SCV: the adapters' (shared/delegate/adapters), plus the
// nested SCV.
const (
	Claude = adapters.Claude
	Codex  = adapters.Codex
	Grok   = adapters.Grok
	DSH    = adapters.DSH
	Pi     = adapters.Pi
	SCV    = "scv"
)

// Descriptor is what the `agent` tool needs to know of an agent to offer
// it and check a call before anything launches. An adapter (package
// adapters) embeds it with the launch details.
type Descriptor struct {
	// Name is the `agent` value, such as "codex".
	Name string
	// Product is the product name, such as "Codex".
	Product string
	// Summary starts the agent's line in the tool description (tools.md,
	// "Choosing an agent"), such as "OpenAI's coding agent; reads, edits,
	// and runs code, with live web search under full permissions".
	Summary string
	// ModelFamily says what `model` expects, such as "OpenAI model ID from
	// the Codex configuration; not a Claude alias". Empty when the agent
	// takes no model.
	ModelFamily string
	// TakesModel, TakesEffort and TakesSession say which optional
	// arguments the agent accepts.
	TakesModel   bool
	TakesEffort  bool
	TakesSession bool
}

// Status is how a delegated run ended.
type Status string

// Statuses of a result (tools.md, "Results").
const (
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusDeclined  Status = "declined"
	StatusTimeout   Status = "timeout"
	StatusCancelled Status = "cancelled"
	// StatusRunning is only seen for background jobs.
	StatusRunning Status = "running"
)

// Usage is the token usage an agent reported.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// ErrorKind classifies a failure for the fallback decision, which reads
// only structured status and error, never the reply.
type ErrorKind string

// Error kinds.
const (
	// ErrorNone: no failure, or one another agent could not avoid
	// (failing tests, a bad cwd).
	ErrorNone ErrorKind = ""
	// ErrorUnavailable: the agent could not run — its executable is
	// missing or failed to start or exited at once, it is signed out, or
	// its provider answered HTTP 401, 403, 404, 429 or 5xx, a quota error
	// or an unknown model. Such a result gains a fallback.
	ErrorUnavailable ErrorKind = "unavailable"
	// ErrorSignedOut: the error reads like a missing sign-in; it is also
	// unavailable, and the result gains a hint naming
	// `scv agents login <name>`.
	ErrorSignedOut ErrorKind = "signed_out"
)

// SignInHint is the `hint` of a signed-out result, the one text every
// backend and the `agent` tool use: the agent's own advice (/login) cannot
// be followed from a remote chat, so it names `scv agents login <name>`.
// product is the agent's product name (Claude Code), name its `agent`
// value (claude).
func SignInHint(product, name string) string {
	if product == "" {
		product = name
	}
	return fmt.Sprintf("%s is not signed in for SCV. Ask the user to run `scv agents login %s` on the SCV host (the agent's own /login advice cannot be followed from here), then call it again.", product, name)
}

// Result is the structured result of one delegated run, the `agent` tool's
// output (tools.md, "Results"). Fields tagged "-" stay inside SCV.
type Result struct {
	Agent      string `json:"agent"`
	Status     Status `json:"status"`
	Reply      string `json:"reply"`
	Usage      *Usage `json:"usage,omitempty"`
	ExitCode   *int   `json:"exit_code,omitempty"`
	StderrTail string `json:"stderr_tail,omitempty"`
	Truncated  bool   `json:"truncated"`
	Error      string `json:"error,omitempty"`
	Hint       string `json:"hint,omitempty"`
	Fallback   string `json:"fallback,omitempty"`
	Note       string `json:"note,omitempty"`
	// Session and Turn are set for a turn of a conversation: the SCV
	// handle (such as "codex-2") and the turn's number in it.
	Session string `json:"session,omitempty"`
	Turn    int    `json:"turn,omitempty"`

	// Kind classifies a failure for the fallback decision.
	Kind ErrorKind `json:"-"`
	// CLISession is the agent CLI's own session id, set once the run's
	// stream reported a session: for Claude and pi the id SCV chose or
	// resumed (never an id from the stream: pi's is not its file's
	// name), for Codex the thread id of thread.started. It makes the
	// conversation resumable. Never shown to the model.
	CLISession string `json:"-"`
}

// JSON returns the result as the tool output.
func (r Result) JSON() string {
	b, err := json.Marshal(r)
	if err != nil {
		// Result holds only strings and numbers; this cannot happen.
		return `{"status":"failed","error":"internal error encoding the result"}`
	}
	return string(b)
}

// Call is one `agent` call, checked by the tool and ready for a backend.
type Call struct {
	// Agent is the chosen agent's name.
	Agent string
	// Prompt is the brief; it never starts with "-".
	Prompt string
	// Dir is the absolute, symlink-resolved directory to run in, inside
	// the workspace.
	Dir string
	// Workspace is the session's workspace (canonical, absolute).
	Workspace string
	// Model and Effort are the selections; empty means omitted.
	Model  string
	Effort string
	// Timeout bounds the run (already clamped to the ceiling).
	Timeout time.Duration
	// Handle is the delegation handle of this run, unique per instance,
	// such as "codex-3f9a2c": the record's name and the process tag.
	Handle string
	// SessionID is the parent SCV session's id; Depth its delegation
	// depth (the child gets Depth+1).
	SessionID string
	Depth     int
	// Conversation is the SCV handle of the conversation this turn
	// belongs to (such as "codex-2"), and Turn its number; empty for a
	// one-off call of an agent that takes no session.
	Conversation string
	Turn         int
	// NewCLISession is the CLI session id SCV chose for a new conversation
	// (Claude, pi); ResumeCLISession the id to resume (all three); both
	// empty for a fresh run.
	NewCLISession    string
	ResumeCLISession string
	// Background is set for a background job's run (recorded for
	// `scv agents ps`).
	Background bool
	// Approve answers the approval requests the agent relays (a backend
	// over ACP or a nested SCV; one process per turn relays none). For a
	// foreground call it is the turn's approval gate (tools.Env.Approve),
	// for a background job the session's unattended answer
	// (approval.Policy.Unattended); nil denies every request.
	Approve ApprovalFunc
}

// ApprovalFunc answers one relayed approval request of the given risk and
// summary: true approves it. ctx ending withdraws the request (denied), so
// a backend whose turn ends leaves no question open with the user.
type ApprovalFunc func(ctx context.Context, risk protocol.Risk, summary string) bool

// ErrUnavailable is wrapped by a Backend's Plan error when the agent
// cannot run at all (its executable is missing): the `agent` tool then
// adds the fallback sentence, as for an unavailable result.
var ErrUnavailable = errors.New("agent unavailable")

// Launch describes what a call would start, for the approval summary.
type Launch struct {
	// Executable is the absolute path of the program.
	Executable string
	// Args are the arguments after argv[0].
	Args []string
	// Dir is the working directory.
	Dir string
	// FullPermissions is set when the user configured permissions = "full"
	// for the agent.
	FullPermissions bool
}

// Backend runs calls of one agent.
type Backend interface {
	// Descriptor describes the agent.
	Descriptor() Descriptor
	// Plan returns what Run would launch for call, for the approval
	// summary. An error refuses the call before approval (for example a
	// missing executable).
	Plan(call Call) (Launch, error)
	// Run runs the call to its end and returns its result. Cancelling ctx
	// stops the agent's process tree (TERM, KILL after 2 s) and returns a
	// cancelled result. progress, when not nil, receives redacted status
	// lines, not rate limited (the caller paces them).
	Run(ctx context.Context, call Call, progress func(line string)) Result
}

// Variables of the delegation chain (tools.md, "Tracking and cleanup"),
// which a transport sets for the agent it starts.
const (
	// ParentVar is SCV_PARENT: the chain of delegations above a process,
	// each <instance>/<session>/<handle>, outermost first, separated by
	// ChainSep. The instance is the SCV_HOME of the SCV that delegated,
	// so an element is split from the right: its last two components
	// are the session and the handle.
	ParentVar = "SCV_PARENT"
	// DepthVar is SCV_DELEGATION_DEPTH, one more than the caller's.
	DepthVar = "SCV_DELEGATION_DEPTH"
	// ChainSep separates the elements of SCV_PARENT. A comma, as in
	// SCV_RUN_TAG's list, because an element holds '/' already.
	ChainSep = ","
)

// ChainEnv rewrites env (KEY=value entries) for a run one level below the
// caller at depth: SCV_PARENT becomes the inherited chain followed by self
// (<instance>/<session>/<handle>), SCV_DELEGATION_DEPTH depth+1; both go
// last. It reuses env's array.
func ChainEnv(env []string, self string, depth int) []string {
	chain := self
	out := env[:0]
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, ParentVar+"="):
			if v := strings.TrimPrefix(kv, ParentVar+"="); v != "" {
				chain = v + ChainSep + self
			}
		case strings.HasPrefix(kv, DepthVar+"="):
		default:
			out = append(out, kv)
		}
	}
	return append(out, ParentVar+"="+chain, DepthVar+"="+strconv.Itoa(depth+1))
}
