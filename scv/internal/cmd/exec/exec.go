// Package exec is `scv exec`: one turn, headless. It starts scv-server as a
// child, speaks the protocol to it like any other client, streams the reply
// to stdout and tool activity to stderr, and exits with the turn's outcome.
package exec

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/spf13/cobra"
)

// ApprovalPolicies are the values of --approval-policy, as scv-server takes
// them.
var ApprovalPolicies = []string{"on-risk", "never", "auto"}

// Default bounds of the waits of a run.
const (
	// DefaultCancelTimeout is how long an interrupted run waits for the
	// server to confirm the cancel before stopping it.
	DefaultCancelTimeout = 5 * time.Second
	// DefaultShutdownTimeout is how long the server gets to exit after its
	// stdin closes before it is killed.
	DefaultShutdownTimeout = 3 * time.Second
)

// Options are the inputs of `scv exec`.
type Options struct {
	IO *cmdutil.IOStreams
	// ServerPath returns the path of scv-server.
	ServerPath func() (string, error)
	// IsTerminal reports whether stdin is a terminal; only then are
	// approval requests asked, and otherwise denied.
	IsTerminal func() bool
	// Signals subscribes to the signals that interrupt a run and returns
	// the channel and a function that unsubscribes.
	Signals func() (<-chan os.Signal, func())
	// CancelTimeout and ShutdownTimeout bound the waits of a run; zero
	// means the default.
	CancelTimeout   time.Duration
	ShutdownTimeout time.Duration
	// ReattachTimeout bounds the wait for a daemon to come back after a
	// planned restart ended the run's connection; zero means
	// client.ReattachTimeout.
	ReattachTimeout time.Duration

	// Prompt is the prompt, or "-" to read it from stdin.
	Prompt string
	// Dir is the workspace; "" means the current directory.
	Dir string
	// JSON prints the server's events as NDJSON instead of the reply.
	JSON bool
	// ApprovalPolicy is passed to the server when it is not "".
	ApprovalPolicy string
	// Continue resumes the workspace's most recently updated session
	// instead of starting a new one.
	Continue bool
	// Daemon runs the turn in the daemon when one runs (its session then
	// stays open there), else in a server of its own: --daemon.
	Daemon bool
	// NoDaemon runs the turn in a server of its own even when a daemon
	// runs: --no-daemon. Without either flag, daemon.use decides.
	NoDaemon bool
	// Verbose (-v) adds the server's log (level info) to stderr; without
	// it a server of the run's own logs only errors there, and stderr
	// holds tool activity and what the user must know.
	Verbose bool
}

// NewCmdExec returns the exec command. runF replaces the behaviour in tests.
func NewCmdExec(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{
		IO:         f.IO,
		ServerPath: func() (string, error) { return f.FindBinary(client.Server) },
		IsTerminal: f.StdinIsTerminal,
		Signals:    notifySignals,
	}
	cmd := &cobra.Command{
		Use:   "exec [flags] PROMPT",
		Short: "Run one turn headless and print the reply",
		Long: `Run one turn headless: start scv-server, send PROMPT, print the streamed
reply on stdout and tool activity on stderr, and exit when the turn ends.
PROMPT "-" reads the prompt from stdin. --continue sends the prompt to the
workspace's most recent session (its history and usage carry over) instead
of a new one; with none stored, it starts a new one.

A tool call that needs approval is asked on the terminal when stdin is one,
and denied otherwise; --approval-policy auto runs every call unasked and is
meant for trusted automation only. Ctrl-C cancels the turn.

Exit codes: 0 the turn completed, 1 it failed or an error occurred,
2 usage error, 130 interrupted or cancelled.`,
		Example: `  scv exec "explain what this repository does"
  scv exec - < task.md
  scv exec --json --cd ~/src/app "list the failing tests"
  scv exec --continue "now fix the first one"`,
		Args: cli.ExactArgs(1, `exec needs one PROMPT argument: quote a prompt of several words, or pass "-" to read it from stdin`),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Prompt = args[0]
			if strings.TrimSpace(opts.Prompt) == "" {
				return cli.UsageErrorf("the prompt is empty")
			}
			if cmd.Flags().Changed("approval-policy") && !validPolicy(opts.ApprovalPolicy) {
				return cli.UsageErrorf("invalid --approval-policy %q: want one of %s", opts.ApprovalPolicy, strings.Join(ApprovalPolicies, ", "))
			}
			if opts.Daemon && opts.NoDaemon {
				return cli.UsageErrorf("--daemon and --no-daemon contradict each other: pass one of them")
			}
			if runF != nil {
				return runF(opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.JSON, "json", false, "print every protocol event from the server as NDJSON on stdout instead of the reply")
	fl.StringVar(&opts.ApprovalPolicy, "approval-policy", "", "approval policy for this run, overriding tools.approval_policy: on-risk, never or auto")
	fl.StringVarP(&opts.Dir, "cd", "C", "", "workspace directory (default: the current directory)")
	fl.BoolVar(&opts.Continue, "continue", false, "continue the workspace's most recent session instead of starting a new one")
	fl.BoolVar(&opts.Daemon, "daemon", false, "run the turn in the daemon when one runs (scv daemon start); otherwise in a server of its own (daemon.use = \"auto\")")
	fl.BoolVarP(&opts.Verbose, "verbose", "v", false, "add the server's log to stderr (by default stderr has tool activity, warnings and errors only)")
	fl.BoolVar(&opts.NoDaemon, "no-daemon", false, "run the turn in a server of its own even when a daemon runs (daemon.use = \"never\")")
	return cmd
}

func validPolicy(p string) bool {
	for _, v := range ApprovalPolicies {
		if p == v {
			return true
		}
	}
	return false
}

func notifySignals() (<-chan os.Signal, func()) {
	c := make(chan os.Signal, 2)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	return c, func() { signal.Stop(c) }
}

// readPrompt returns the prompt, reading it from in for "-". The trailing
// newline of piped input is not part of the prompt.
func readPrompt(prompt string, in io.Reader) (string, error) {
	if prompt != "-" {
		return prompt, checkPromptSize(prompt)
	}
	b, err := io.ReadAll(io.LimitReader(in, protocol.MaxPromptBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading the prompt from stdin: %w", err)
	}
	p := strings.TrimRight(string(b), "\r\n")
	if strings.TrimSpace(p) == "" {
		return "", cli.UsageErrorf("the prompt read from stdin is empty")
	}
	return p, checkPromptSize(p)
}

// checkPromptSize refuses a prompt the server would refuse, before starting
// it.
func checkPromptSize(p string) error {
	if len(p) > protocol.MaxPromptBytes {
		return cli.UsageErrorf("the prompt is over the %d KiB limit", protocol.MaxPromptBytes>>10)
	}
	return nil
}

// TurnFailedError is a turn that ended with turn.failed.
type TurnFailedError struct {
	Code    protocol.FailureCode
	Message string
}

func (e *TurnFailedError) Error() string {
	return fmt.Sprintf("turn failed (%s): %s", e.Code, e.Message)
}

// ServerError is an error event that ended the run.
type ServerError struct {
	// Request is the type of the client message the server refused, "" when
	// the error answers none.
	Request string
	Code    protocol.ErrorCode
	Message string
}

func (e *ServerError) Error() string {
	if e.Request != "" {
		return fmt.Sprintf("scv-server refused %s (%s): %s", e.Request, e.Code, e.Message)
	}
	return fmt.Sprintf("scv-server error (%s): %s", e.Code, e.Message)
}

// ErrServerExited is wrapped by the error of a run whose server exited, or
// closed its stdout, before the turn ended.
var ErrServerExited = errors.New("scv-server exited before the turn ended")
