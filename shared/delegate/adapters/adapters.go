// Package adapters is the table of delegated agent CLIs SCV knows
// (tools.md, "Delegated agents"): for each agent its descriptor data, the
// executable and where it is looked up, the argument vector of one
// headless turn (fixed arguments, permissions="full" switches, output
// format arguments, conversation arguments, model/effort/prompt
// arguments), the output format of its stdout, and its private
// environment (the scrub of inherited variables, the private HOME, XDG and
// state directories under $SCV_HOME/agents/<name>, extra variables).
// Adding an agent is one more entry in the table.
//
// The package runs nothing: scv-server's agents runner launches what it
// describes, and `scv agents login|logout|status` runs the sign-in
// commands with the same private environment.
package adapters

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/scv-cli/scv/shared/childenv"
	"github.com/scv-cli/scv/shared/paths"

	"github.com/scv-cli/scv/shared/textcut"
)

// Agent names.
const (
	Claude = "claude"
	Codex  = "codex"
	Grok   = "grok"
	DSH    = "dsh"
	Pi     = "pi"
)

// Format is how an agent's stdout is read.
type Format string

// Output formats.
const (
	// FormatStreamJSON is Claude Code's --output-format stream-json.
	FormatStreamJSON Format = "stream-json"
	// FormatCodexJSON is `codex exec --json`.
	FormatCodexJSON Format = "codex-json"
	// FormatPiJSON is `pi --mode json`.
	FormatPiJSON Format = "pi-json"
	// FormatText is plain text: stdout is the reply.
	FormatText Format = "text"
)

// Placeholders substituted inside an argument template. A template
// element is one argument; a placeholder is replaced inside it, so a value
// never becomes more than one argument.
const (
	// ModelPlaceholder stands for the selected model.
	ModelPlaceholder = "{model}"
	// EffortPlaceholder stands for the selected effort.
	EffortPlaceholder = "{effort}"
	// SessionPlaceholder stands for the CLI session id.
	SessionPlaceholder = "{session}"
	// OutputFilePlaceholder stands for the file of the final message
	// (Codex's -o).
	OutputFilePlaceholder = "{output_file}"
	// StateDirPlaceholder stands for the absolute state directory of the
	// agent inside its private home (pi's .pi/agent), in conversation
	// arguments.
	StateDirPlaceholder = "{state_dir}"
)

// Efforts are the values an effort selection may take.
var Efforts = []string{"low", "medium", "high", "xhigh", "max"}

// Command is a sign-in command of an agent: Args after the executable.
type Command struct {
	Args []string
}

// Adapter is one delegated agent CLI.
type Adapter struct {
	// Name is the `agent` value, such as "codex".
	Name string
	// Product is the product name, such as "Codex".
	Product string
	// Summary starts the agent's line in the tool description.
	Summary string
	// ModelFamily says what `model` expects; empty when the agent takes
	// no model.
	ModelFamily string

	// Executable is the program's name, looked up by Lookup.
	Executable string
	// InstallDirs are per-user install directories relative to the user's
	// HOME, searched in order before PATH.
	InstallDirs []string
	// Path, when set, is the absolute program Lookup returns without
	// searching (tests and unusual installs).
	Path string
	// PreArgs come before FixedArgs (tests run a script through
	// /bin/bash with Path "/bin/bash" and PreArgs the script).
	PreArgs []string

	// FixedArgs start every new run; ResumeFixedArgs replace them when a
	// conversation is resumed (Codex's `exec resume`). Nil means the same
	// as FixedArgs.
	FixedArgs       []string
	ResumeFixedArgs []string
	// FullPermissionsArgs follow the fixed arguments when the user set
	// permissions = "full"; FullPermissionsEnv are added to the
	// environment then.
	FullPermissionsArgs []string
	FullPermissionsEnv  []string
	// OutputArgs select the output format (templates; Codex's -o file is
	// OutputFilePlaceholder).
	OutputArgs []string
	// NewSessionArgs start a conversation with an id SCV chose;
	// ResumeArgs continue one (templates with SessionPlaceholder). An
	// agent with ResumeArgs takes `session`. Codex has no NewSessionArgs:
	// its thread id comes from the stream.
	NewSessionArgs []string
	ResumeArgs     []string
	// ModelArgs and EffortArgs map the selections (templates); nil means
	// the agent does not take it.
	ModelArgs  []string
	EffortArgs []string
	// PromptArgs come right before the prompt (Grok's -p).
	PromptArgs []string
	// Format is how stdout is read.
	Format Format

	// StateVar names the variable pointing at the agent's state
	// directory, StateDir that directory relative to the private home
	// ("" or "." is the home itself).
	StateVar string
	StateDir string
	// ExtraEnv are set in every run (Grok's GROK_DISABLE_AUTOUPDATER=1).
	ExtraEnv []string
	// Env are the variables the agent needs from the server's environment
	// beyond childenv.Base (names, or prefixes ending in "*"); nothing else
	// is inherited. A name that Scrubbed removes stays removed.
	Env []string
	// Scrub are the agent's own credential, endpoint and state variables:
	// exact names, or prefixes ending in "*". Every adapter's run removes
	// the union of all adapters' lists and the common ones (see
	// CommonScrub).
	Scrub []string

	// Login, Logout and Status are the CLI's own sign-in commands, run by
	// `scv agents login|logout|status` with the private environment; nil
	// when SCV manages the agent's sign-in files itself.
	Login, Logout, Status *Command

	// ACP is the agent's Agent Client Protocol server; nil when it has
	// none (pi).
	ACP *ACPServer
}

// ACPServer is an agent's Agent Client Protocol server (tools.md, "Agent
// Client Protocol transport"). It runs with the agent's private
// environment, so the CLI's sign-in covers it.
type ACPServer struct {
	// Executable is the server's program name, looked up in
	// ~/.local/bin and then PATH; empty means the agent's own CLI, looked
	// up like it (grok agent stdio, dsh --profile acp).
	Executable string
	// Path, when set, is the absolute program LookupACP returns without
	// searching (tests and unusual installs).
	Path string
	// Args start the server; FullArgs replace them under
	// permissions = "full" (nil: Args).
	Args, FullArgs []string
	// FullEnv is added to the environment under permissions = "full".
	FullEnv []string
	// Package names where the server comes from, for messages.
	Package string
	// KeyVar, KeyFile and KeyField say where an API key configured for
	// the agent is found: the JSON string field KeyField of KeyFile
	// (relative to the state directory). SCV gives it to the server as
	// KeyVar, since inherited key variables are removed, and picks the
	// agent's env_var sign-in method for it: codex-acp refuses sessions
	// until authenticate names that method, even with the key stored.
	KeyVar, KeyFile, KeyField string
}

// FullAccessModes are the ACP session modes that mean full permissions,
// in order of preference: SCV selects the first one the agent advertises
// (Claude's bypassPermissions, Codex adapters' agent-full-access or
// full-access).
var FullAccessModes = []string{"bypassPermissions", "agent-full-access", "full-access"}

// acpInstallDirs are where an ACP server other than the CLI is looked
// up before PATH.
var acpInstallDirs = []string{".local/bin"}

// LookupACP returns the absolute path of the agent's ACP server program,
// wrapping ErrNotInstalled when it is missing (or the agent has none).
func (a Adapter) LookupACP(env paths.Env) (string, error) {
	s := a.ACP
	switch {
	case s == nil:
		return "", fmt.Errorf("%s (%s) has no ACP server SCV runs: %w", a.Name, a.Product, ErrNotInstalled)
	case s.Path != "":
		c := Adapter{Name: a.Name, Product: a.Product, Path: s.Path}
		return c.Lookup(env)
	case s.Executable == "":
		return a.Lookup(env)
	}
	c := Adapter{Name: a.Name, Product: a.Product, Executable: s.Executable, InstallDirs: acpInstallDirs}
	p, err := c.Lookup(env)
	if err != nil {
		return "", fmt.Errorf("the ACP server of %s (%s) is not installed: no executable %q in ~/.local/bin or PATH; install %s: %w",
			a.Name, a.Product, s.Executable, s.Package, ErrNotInstalled)
	}
	return p, nil
}

// ACPArgs returns the ACP server's arguments.
func (a Adapter) ACPArgs(full bool) []string {
	if a.ACP == nil {
		return nil
	}
	if full && a.ACP.FullArgs != nil {
		return slices.Clone(a.ACP.FullArgs)
	}
	return slices.Clone(a.ACP.Args)
}

// TakesModel reports whether the agent maps a model selection.
func (a Adapter) TakesModel() bool { return a.ModelArgs != nil }

// TakesEffort reports whether the agent maps an effort selection.
func (a Adapter) TakesEffort() bool { return a.EffortArgs != nil }

// TakesSession reports whether the agent can continue a conversation in
// one process per turn.
func (a Adapter) TakesSession() bool { return a.ResumeArgs != nil }

// ChoosesSession reports whether SCV picks the CLI session id of a new
// conversation (Claude, pi); otherwise the CLI reports it (Codex).
func (a Adapter) ChoosesSession() bool { return a.NewSessionArgs != nil }

var table = []Adapter{
	{
		Name:                Claude,
		Product:             "Claude Code",
		Summary:             "Anthropic's coding agent; reads, edits, and runs code, and can search and fetch the web",
		ModelFamily:         "Claude model alias such as sonnet or opus, or a full Claude model ID",
		Executable:          "claude",
		InstallDirs:         []string{".local/bin"},
		FixedArgs:           []string{"-p"},
		FullPermissionsArgs: []string{"--permission-mode", "bypassPermissions"},
		OutputArgs:          []string{"--output-format", "stream-json", "--verbose"},
		NewSessionArgs:      []string{"--session-id", SessionPlaceholder},
		ResumeArgs:          []string{"--resume", SessionPlaceholder},
		ModelArgs:           []string{"--model", ModelPlaceholder},
		EffortArgs:          []string{"--effort", EffortPlaceholder},
		Format:              FormatStreamJSON,
		// Claude Code offers its bypass mode to root only in a sandbox
		// that says so; a daemon run as root in a container passes it on.
		Env: []string{"IS_SANDBOX"},
		Scrub: []string{
			"ANTHROPIC_*", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR",
			"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_SKIP_BEDROCK_AUTH",
			"CLAUDE_CODE_SKIP_VERTEX_AUTH", "AWS_BEARER_TOKEN_BEDROCK",
			// Set inside a Claude Code session; a nested claude refuses
			// to start with them.
			"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SSE_PORT",
		},
		Login:  &Command{Args: []string{"auth", "login"}},
		Logout: &Command{Args: []string{"auth", "logout"}},
		Status: &Command{Args: []string{"auth", "status"}},
		ACP:    &ACPServer{Executable: "claude-agent-acp", Package: "npm @agentclientprotocol/claude-agent-acp"},
	},
	{
		Name:        Codex,
		Product:     "Codex",
		Summary:     "OpenAI's coding agent; reads, edits, and runs code, with live web search under full permissions",
		ModelFamily: "OpenAI model ID from the Codex configuration; not a Claude alias",
		Executable:  "codex",
		InstallDirs: []string{".local/bin"},
		FixedArgs:   []string{"exec"},
		// The exec options go before the resume subcommand, as Codex's
		// own examples give them (`codex exec --json resume <id> <prompt>`).
		ResumeFixedArgs:     []string{"exec"},
		FullPermissionsArgs: []string{"--dangerously-bypass-approvals-and-sandbox", "-c", `web_search="live"`},
		OutputArgs:          []string{"--json", "-o", OutputFilePlaceholder},
		ResumeArgs:          []string{"resume", SessionPlaceholder},
		ModelArgs:           []string{"-m", ModelPlaceholder},
		EffortArgs:          []string{"-c", `model_reasoning_effort="` + EffortPlaceholder + `"`},
		Format:              FormatCodexJSON,
		StateVar:            "CODEX_HOME",
		StateDir:            ".",
		Scrub: []string{
			"CODEX_*", "OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_ORGANIZATION",
			"OPENAI_ORG_ID", "OPENAI_PROJECT", "OPENAI_PROJECT_ID", "AZURE_OPENAI_*",
		},
		Login:  &Command{Args: []string{"login"}},
		Logout: &Command{Args: []string{"logout"}},
		Status: &Command{Args: []string{"login", "status"}},
		// codex-acp takes no -c overrides: CODEX_CONFIG is their JSON form.
		ACP: &ACPServer{Executable: "codex-acp", Package: "npm @zed-industries/codex-acp",
			FullEnv: []string{`CODEX_CONFIG={"web_search":"live"}`},
			KeyVar:  "CODEX_API_KEY", KeyFile: "auth.json", KeyField: "OPENAI_API_KEY"},
	},
	{
		Name:                Grok,
		Product:             "Grok Build",
		Summary:             "xAI's coding agent; reads, edits, and runs code, with live web and X search. Call it when another agent declined or refused a request, including a safety or guardrail refusal",
		ModelFamily:         "Grok model ID",
		Executable:          "grok",
		InstallDirs:         []string{".local/bin", ".grok/bin"},
		FullPermissionsArgs: []string{"--always-approve"},
		ModelArgs:           []string{"-m", ModelPlaceholder},
		EffortArgs:          []string{"--reasoning-effort", EffortPlaceholder},
		PromptArgs:          []string{"-p"},
		Format:              FormatText,
		StateVar:            "GROK_HOME",
		StateDir:            ".grok",
		ExtraEnv:            []string{"GROK_DISABLE_AUTOUPDATER=1"},
		Scrub:               []string{"GROK_*", "XAI_*"},
		Login:               &Command{Args: []string{"login"}},
		Logout:              &Command{Args: []string{"logout"}},
		ACP: &ACPServer{Args: []string{"agent", "stdio"}, FullArgs: []string{"agent", "--always-approve", "stdio"},
			Package: "Grok Build (built in)"},
	},
	{
		Name:               DSH,
		Product:            "DeepSeek Harness",
		Summary:            "a coding agent on DeepSeek models",
		Executable:         "dsh",
		InstallDirs:        []string{".local/bin"},
		FixedArgs:          []string{"--profile", "headless"},
		FullPermissionsEnv: []string{"DSH_PERMISSION_MODE=danger-full-access"},
		Format:             FormatText,
		StateVar:           "DSH_HOME",
		StateDir:           ".dsh",
		Scrub:              []string{"DSH_*", "DEEPSEEK_*"},
		ACP: &ACPServer{Args: []string{"--profile", "acp"}, FullEnv: []string{"DSH_PERMISSION_MODE=danger-full-access"},
			Package: "DeepSeek Harness 0.1.7-rc.1 or later (built in)"},
	},
	{
		Name:        Pi,
		Product:     "pi",
		Summary:     "a minimal coding agent that can run on SCV's own model endpoint; no web search",
		ModelFamily: "pi model pattern or provider/id, such as scv/<id>",
		Executable:  "pi",
		InstallDirs: []string{".local/bin"},
		FixedArgs:   []string{"-p"},
		OutputArgs:  []string{"--mode", "json"},
		// pi 0.73 has no --session-id: --session takes a session file,
		// which it creates when missing, so SCV names the file after the
		// id it chose, in pi's own sessions directory.
		NewSessionArgs: []string{"--session", StateDirPlaceholder + "/sessions/" + SessionPlaceholder + ".jsonl"},
		ResumeArgs:     []string{"--session", StateDirPlaceholder + "/sessions/" + SessionPlaceholder + ".jsonl"},
		ModelArgs:      []string{"--model", ModelPlaceholder},
		EffortArgs:     []string{"--thinking", EffortPlaceholder},
		Format:         FormatPiJSON,
		StateVar:       "PI_CODING_AGENT_DIR",
		StateDir:       ".pi/agent",
		Scrub:          []string{"PI_*"},
	},
}

// All returns every adapter, in the order SCV offers them. The slices
// are copies: changing them does not change the table.
func All() []Adapter {
	out := make([]Adapter, len(table))
	for i, a := range table {
		out[i] = a.clone()
	}
	return out
}

// Get returns the adapter named name.
func Get(name string) (Adapter, bool) {
	for _, a := range table {
		if a.Name == name {
			return a.clone(), true
		}
	}
	return Adapter{}, false
}

// Names returns the adapters' names in order.
func Names() []string {
	names := make([]string, len(table))
	for i, a := range table {
		names[i] = a.Name
	}
	return names
}

func (a Adapter) clone() Adapter {
	c := a
	for _, s := range []*[]string{&c.InstallDirs, &c.PreArgs, &c.FixedArgs, &c.ResumeFixedArgs,
		&c.FullPermissionsArgs, &c.FullPermissionsEnv, &c.OutputArgs, &c.NewSessionArgs,
		&c.ResumeArgs, &c.ModelArgs, &c.EffortArgs, &c.PromptArgs, &c.ExtraEnv, &c.Env, &c.Scrub} {
		*s = slices.Clone(*s)
	}
	if c.ACP != nil {
		acp := *c.ACP
		acp.Args, acp.FullArgs, acp.FullEnv = slices.Clone(acp.Args), slices.Clone(acp.FullArgs), slices.Clone(acp.FullEnv)
		c.ACP = &acp
	}
	for _, p := range []**Command{&c.Login, &c.Logout, &c.Status} {
		if *p != nil {
			cmd := Command{Args: slices.Clone((*p).Args)}
			*p = &cmd
		}
	}
	return c
}

// ValidateModel checks a model selection: 1-128 ASCII letters, digits or
// `._:/@[]-`, not starting with `-` or `@`.
func ValidateModel(m string) error {
	if m == "" || len(m) > 128 {
		return fmt.Errorf("model %q is not valid: use 1 to 128 characters", truncate(m))
	}
	if m[0] == '-' || m[0] == '@' {
		return fmt.Errorf("model %q is not valid: it cannot start with %q", truncate(m), m[:1])
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._:/@[]-", c) >= 0) {
			return fmt.Errorf("model %q is not valid: use only ASCII letters, digits and ._:/@[]-", truncate(m))
		}
	}
	return nil
}

// ValidateEffort checks an effort selection: low, medium, high, xhigh or
// max.
func ValidateEffort(e string) error {
	if slices.Contains(Efforts, e) {
		return nil
	}
	return fmt.Errorf("effort %q is not valid: use low, medium, high, xhigh or max", truncate(e))
}

// truncate bounds a value quoted in an error to 64 bytes, on a character
// boundary.
func truncate(s string) string {
	if len(s) > 64 {
		return textcut.Prefix(s, 64) + "…"
	}
	return s
}

// Invocation is what one run selects.
type Invocation struct {
	// Prompt is the brief, passed as the last argument.
	Prompt string
	// Model and Effort are the selections; empty means omitted.
	Model, Effort string
	// NewSession is the CLI session id SCV chose for a new conversation,
	// passed only to agents with NewSessionArgs (ChoosesSession); others
	// ignore it. ResumeSession is the one to continue. At most one is
	// set.
	NewSession, ResumeSession string
	// FullPermissions adds the permissions="full" switches.
	FullPermissions bool
	// OutputFile is the file of the final message, for formats whose
	// OutputArgs name one (Codex); required then.
	OutputFile string
	// StateDir is the agent's absolute state directory (StatePath), for
	// conversation arguments that name a file in it (pi); required then.
	StateDir string
}

// ErrUnsupportedOption is wrapped by Args when the invocation selects an
// option the agent does not take.
var ErrUnsupportedOption = errors.New("option not supported by the agent")

// Args returns the argument vector after argv[0] for inv: PreArgs, fixed
// arguments, permissions switches, output format arguments, conversation
// arguments, model and effort arguments, prompt arguments, and the prompt
// as the last argument. It checks the selections and that the prompt
// does not start with "-".
func (a Adapter) Args(inv Invocation) ([]string, error) {
	if inv.Prompt == "" {
		return nil, errors.New("the prompt is empty; give the agent a brief")
	}
	if inv.Prompt[0] == '-' {
		return nil, errors.New("the prompt cannot start with \"-\", which the agent would read as a flag; start it with a word")
	}
	if inv.NewSession != "" && inv.ResumeSession != "" {
		return nil, errors.New("a run cannot both start and resume a conversation")
	}
	args := slices.Clone(a.PreArgs)
	fixed := a.FixedArgs
	if inv.ResumeSession != "" && a.ResumeFixedArgs != nil {
		fixed = a.ResumeFixedArgs
	}
	args = append(args, fixed...)
	if inv.FullPermissions {
		args = append(args, a.FullPermissionsArgs...)
	}
	if slices.ContainsFunc(a.OutputArgs, func(s string) bool { return strings.Contains(s, OutputFilePlaceholder) }) {
		if inv.OutputFile == "" {
			return nil, fmt.Errorf("%s needs an output file for its final message", a.Name)
		}
	}
	args = append(args, substitute(a.OutputArgs, OutputFilePlaceholder, inv.OutputFile)...)
	// Codex resumes with the thread id as a positional argument right
	// before the prompt; the others take a flag here.
	var resumeTail []string
	switch {
	case inv.NewSession != "" && a.NewSessionArgs == nil:
		// The CLI picks its own id (Codex reports it in the stream) or
		// keeps no conversation: SCV's choice is not passed.
	case inv.NewSession != "":
		if err := validateSession(inv.NewSession); err != nil {
			return nil, err
		}
		sa, err := a.sessionArgs(a.NewSessionArgs, inv.NewSession, inv.StateDir)
		if err != nil {
			return nil, err
		}
		args = append(args, sa...)
	case inv.ResumeSession != "":
		if a.ResumeArgs == nil {
			return nil, fmt.Errorf("%s does not take session: %w", a.Name, ErrUnsupportedOption)
		}
		if err := validateSession(inv.ResumeSession); err != nil {
			return nil, err
		}
		resume, err := a.sessionArgs(a.ResumeArgs, inv.ResumeSession, inv.StateDir)
		if err != nil {
			return nil, err
		}
		if a.ResumeFixedArgs != nil {
			resumeTail = resume
		} else {
			args = append(args, resume...)
		}
	}
	if inv.Model != "" {
		if a.ModelArgs == nil {
			return nil, fmt.Errorf("%s does not take model: %w", a.Name, ErrUnsupportedOption)
		}
		if err := ValidateModel(inv.Model); err != nil {
			return nil, err
		}
		args = append(args, substitute(a.ModelArgs, ModelPlaceholder, inv.Model)...)
	}
	if inv.Effort != "" {
		if a.EffortArgs == nil {
			return nil, fmt.Errorf("%s does not take effort: %w", a.Name, ErrUnsupportedOption)
		}
		if err := ValidateEffort(inv.Effort); err != nil {
			return nil, err
		}
		args = append(args, substitute(a.EffortArgs, EffortPlaceholder, inv.Effort)...)
	}
	args = append(args, resumeTail...)
	args = append(args, a.PromptArgs...)
	return append(args, inv.Prompt), nil
}

// validateSession checks a CLI session id before it becomes an argument:
// it must not read as a flag and must be printable without spaces.
func validateSession(id string) error {
	if id == "" || len(id) > 256 || id[0] == '-' {
		return fmt.Errorf("CLI session id %q is not valid", truncate(id))
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] == 0x7f {
			return fmt.Errorf("CLI session id %q is not valid", truncate(id))
		}
	}
	return nil
}

// sessionArgs substitutes the session id and the state directory into
// conversation arguments.
func (a Adapter) sessionArgs(tmpl []string, session, stateDir string) ([]string, error) {
	if slices.ContainsFunc(tmpl, func(s string) bool { return strings.Contains(s, StateDirPlaceholder) }) && !filepath.IsAbs(stateDir) {
		return nil, fmt.Errorf("%s needs its absolute state directory for its session file", a.Name)
	}
	return substitute(substitute(tmpl, SessionPlaceholder, session), StateDirPlaceholder, stateDir), nil
}

func substitute(tmpl []string, placeholder, value string) []string {
	out := make([]string, len(tmpl))
	for i, s := range tmpl {
		out[i] = strings.ReplaceAll(s, placeholder, value)
	}
	return out
}

// ErrNotInstalled is wrapped by Lookup when the executable is not found.
var ErrNotInstalled = errors.New("agent executable not found")

// Lookup returns the absolute path of the agent's executable: Path when
// set, else the first executable regular file named Executable in the
// InstallDirs under env's HOME, then in env's PATH (relative PATH entries
// are ignored, as a daemon's working directory means nothing).
func (a Adapter) Lookup(env paths.Env) (string, error) {
	if a.Path != "" {
		if !filepath.IsAbs(a.Path) {
			return "", fmt.Errorf("%s: executable %q is not an absolute path", a.Name, a.Path)
		}
		if !isExecutable(a.Path) {
			return "", fmt.Errorf("%s: %s is not an executable file: %w", a.Name, a.Path, ErrNotInstalled)
		}
		return a.Path, nil
	}
	if env == nil {
		env = paths.OSEnv()
	}
	var dirs []string
	if home := env.Getenv("HOME"); filepath.IsAbs(home) {
		for _, d := range a.InstallDirs {
			dirs = append(dirs, filepath.Join(home, d))
		}
	}
	for _, d := range filepath.SplitList(env.Getenv("PATH")) {
		if filepath.IsAbs(d) {
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, a.Executable)
		if isExecutable(p) {
			return p, nil
		}
	}
	where := strings.Join(a.InstallDirs, ", ~/")
	return "", fmt.Errorf("%s (%s) is not installed: no executable %q in ~/%s or PATH; install it or put it on the server's PATH: %w",
		a.Name, a.Product, a.Executable, where, ErrNotInstalled)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// CommonScrub are variables no delegated agent inherits, whatever the
// agent: every *_API_KEY (a leading "*" is a suffix pattern) and SCV's own
// selector variables (SCV_* except the tracking variables, which the
// runner sets).
var CommonScrub = []string{"*_API_KEY", "SCV_*"}

// keptSCV are the SCV_* variables a delegated run keeps: the run tag (so
// an outer run's sweep still finds the child) and the delegation chain,
// which the runner rewrites.
var keptSCV = []string{"SCV_RUN_TAG", "SCV_PARENT", "SCV_DELEGATION_DEPTH"}

// privateVars are set by PrivateEnv; inherited values are dropped.
var privateVars = []string{"HOME", "SCV_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"}

// ScrubList returns the patterns removed from every agent's environment:
// CommonScrub and the union of all adapters' Scrub lists, so no agent
// inherits another agent's credentials either.
func ScrubList() []string { return slices.Clone(scrubList()) }

var scrubList = sync.OnceValue(func() []string {
	out := slices.Clone(CommonScrub)
	for _, a := range table {
		for _, s := range a.Scrub {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
})

// Scrubbed reports whether an inherited variable name is removed from a
// delegated agent's environment.
func Scrubbed(name string) bool {
	if slices.Contains(privateVars, name) {
		return true
	}
	if slices.Contains(keptSCV, name) {
		return false
	}
	for _, p := range scrubList() {
		if match(p, name) {
			return true
		}
	}
	return false
}

func match(pattern, name string) bool {
	switch {
	case strings.HasPrefix(pattern, "*"):
		return strings.HasSuffix(name, pattern[1:])
	case strings.HasSuffix(pattern, "*"):
		return strings.HasPrefix(name, pattern[:len(pattern)-1])
	}
	return name == pattern
}

// Home returns the agent's private home: scvHome/agents/<name>.
func (a Adapter) Home(scvHome string) (string, error) {
	return paths.AgentDir(scvHome, a.Name)
}

// StatePath returns the directory StateVar points at, or "" when the
// agent has none.
func (a Adapter) StatePath(scvHome string) (string, error) {
	if a.StateVar == "" {
		return "", nil
	}
	h, err := a.Home(scvHome)
	if err != nil {
		return "", err
	}
	return filepath.Join(h, a.StateDir), nil
}

// TmpDir returns the private tmp directory inside the agent's state
// directory (its home when it has none), where Codex's -o file goes.
func (a Adapter) TmpDir(scvHome string) (string, error) {
	d, err := a.StatePath(scvHome)
	if err == nil && d == "" {
		d, err = a.Home(scvHome)
	}
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "tmp"), nil
}

// PrivateDirs returns the directories PrivateEnv points at, which must
// exist (mode 0700) before a run: the private home, its .scv, XDG config,
// data, state and cache directories, and the state directory.
func (a Adapter) PrivateDirs(scvHome string) ([]string, error) {
	h, err := a.Home(scvHome)
	if err != nil {
		return nil, err
	}
	dirs := []string{h, filepath.Join(h, paths.DirName), filepath.Join(h, ".config"),
		filepath.Join(h, ".local", "share"), filepath.Join(h, ".local", "state"), filepath.Join(h, ".cache")}
	if s, _ := a.StatePath(scvHome); s != "" && s != h {
		dirs = append(dirs, s)
	}
	return dirs, nil
}

// EnsureDirs creates PrivateDirs with mode 0700.
func (a Adapter) EnsureDirs(scvHome string) error {
	dirs, err := a.PrivateDirs(scvHome)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if err := paths.EnsureDir(d); err != nil {
			return err
		}
	}
	return nil
}

// PrivateEnv returns the entries (KEY=value) of base that the allow-list
// keeps (childenv.Base and the adapter's Env) and Scrubbed does not
// remove, plus the private HOME=$SCV_HOME/agents/<name>,
// SCV_HOME=<home>/.scv, XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_STATE_HOME and
// XDG_CACHE_HOME inside it, the agent's state variable, and ExtraEnv.
// scvHome must be absolute. The directories are not created (see
// EnsureDirs). Entries without '=' are dropped; a later duplicate wins.
func (a Adapter) PrivateEnv(base []string, scvHome string) ([]string, error) {
	if !filepath.IsAbs(scvHome) {
		return nil, fmt.Errorf("SCV home %q is not an absolute path", scvHome)
	}
	h, err := a.Home(scvHome)
	if err != nil {
		return nil, err
	}
	env := make([]string, 0, len(base)+10)
	for _, kv := range base {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || !childenv.Allowed(name, a.Env...) || Scrubbed(name) {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"HOME="+h,
		paths.HomeEnv+"="+filepath.Join(h, paths.DirName),
		"XDG_CONFIG_HOME="+filepath.Join(h, ".config"),
		"XDG_DATA_HOME="+filepath.Join(h, ".local", "share"),
		"XDG_STATE_HOME="+filepath.Join(h, ".local", "state"),
		"XDG_CACHE_HOME="+filepath.Join(h, ".cache"),
	)
	if a.StateVar != "" {
		s, _ := a.StatePath(scvHome)
		env = append(env, a.StateVar+"="+s)
	}
	env = append(env, a.ExtraEnv...)
	return dedupe(env), nil
}

// dedupe keeps only the last entry of each variable, where it stands.
func dedupe(env []string) []string {
	last := make(map[string]int, len(env))
	for i, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		last[name] = i
	}
	out := env[:0:0]
	for i, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if last[name] == i {
			out = append(out, kv)
		}
	}
	return out
}
