// Package config is `scv config`: `show` prints the effective configuration
// of a workspace with the source of every value, secrets redacted, and
// `path` prints where the configuration files are.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	sconfig "github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/delegate/signin"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/shared/textcut"
)

// Options are the inputs of `scv config show` and `scv config path`.
type Options struct {
	IO *cmdutil.IOStreams
	// Env is the environment (SCV_HOME, overrides, key variables).
	Env paths.Env
	// Dir is the workspace; "" means the current directory.
	Dir string
	// JSON prints machine-readable output (show only).
	JSON bool
}

// NewCmdConfig returns the config command and its subcommands. runShow and
// runPath replace their behaviour in tests.
func NewCmdConfig(f *cmdutil.Factory, runShow, runPath func(*Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the configuration and where it comes from",
		Long: `Show the configuration SCV uses and where its files are. The user file
$SCV_HOME/config.toml and the workspace's .scv/config.toml (only [tools]
options) are merged over the defaults, and environment overrides come last.
See docs/configuration.md for every key.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cli.UsageErrorf("unknown config command %q: use show or path", args[0])
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(NewCmdShow(f, runShow), NewCmdPath(f, runPath))
	return cmd
}

func newOptions(f *cmdutil.Factory) *Options {
	return &Options{IO: f.IO, Env: paths.OSEnv()}
}

// NewCmdShow returns `scv config show`.
func NewCmdShow(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := newOptions(f)
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration and the source of each value",
		Long: `Print every configuration key for the workspace (the current directory, or
--cd DIR) with its value and its source: the default, the user file or the
project file (path:line), or an environment variable. Secrets are never
printed: api_key and header values appear as "set" or "not set", and
api_key_env shows the variable's name and whether it is set.

A configuration error exits 1 with the loader's message.`,
		Example: `  scv config show
  scv config show --cd ~/src/app --json`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return Show(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the configuration as JSON")
	cmd.Flags().StringVarP(&opts.Dir, "cd", "C", "", "workspace directory (default: the current directory)")
	return cmd
}

// NewCmdPath returns `scv config path`.
func NewCmdPath(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := newOptions(f)
	cmd := &cobra.Command{
		Use:   "path",
		Short: "Print where the configuration files are",
		Long: `Print the user configuration file, the project configuration file of the
workspace (the current directory, or --cd DIR) and the instance directory
SCV_HOME, each marked "exists" or "not found".`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return Path(opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Dir, "cd", "C", "", "workspace directory (default: the current directory)")
	return cmd
}

// locations are the files of a workspace's configuration.
type locations struct {
	home, workspace, user, project string
}

func locate(opts *Options) (locations, error) {
	home, err := paths.Home(opts.Env)
	if err != nil {
		return locations{}, err
	}
	ws, err := workspace(opts.Dir)
	if err != nil {
		return locations{}, err
	}
	return locations{home: home, workspace: ws, user: paths.ConfigFile(home), project: paths.ProjectConfigFile(ws)}, nil
}

// workspace returns the canonical workspace for dir ("" is the current
// directory), as the server resolves a session's cwd.
func workspace(dir string) (string, error) { return paths.ResolveWorkspace(dir, true) }

func exists(path string) string {
	if _, err := os.Stat(path); err == nil {
		return "exists"
	} else if errors.Is(err, fs.ErrNotExist) {
		return "not found"
	} else {
		return "cannot be read: " + err.Error()
	}
}

// Path prints the configuration files and SCV_HOME.
func Path(opts *Options) error {
	loc, err := locate(opts)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "user config\t%s\t%s\n", exists(loc.user), loc.user)
	fmt.Fprintf(tw, "project config\t%s\t%s\n", exists(loc.project), loc.project)
	fmt.Fprintf(tw, "SCV_HOME\t%s\t%s\n", exists(loc.home), loc.home)
	return tw.Flush()
}

// jsonEntry is one key of `show --json`.
type jsonEntry struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
	// Redacted is true when value stands for a secret.
	Redacted bool `json:"redacted,omitempty"`
	// EnvSet tells, for api_key_env, whether the variable is set.
	EnvSet *bool      `json:"env_set,omitempty"`
	Source jsonSource `json:"source"`
}

type jsonSource struct {
	Kind string `json:"kind"` // default, user, project or env
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Env  string `json:"env,omitempty"`
}

type jsonShow struct {
	Workspace   string      `json:"workspace"`
	UserFile    string      `json:"user_file"`
	ProjectFile string      `json:"project_file"`
	Keys        []jsonEntry `json:"keys"`
	Warnings    []string    `json:"warnings"`
	// Imports are the imported agent setups; omitted when there are none.
	Imports []jsonImport `json:"imports,omitempty"`
}

var sourceKinds = map[sconfig.SourceKind]string{
	sconfig.SourceDefault: "default", "": "default",
	sconfig.SourceUser: "user", sconfig.SourceProject: "project", sconfig.SourceEnv: "env",
}

// Show prints the effective configuration of the workspace.
func Show(opts *Options) error {
	loc, err := locate(opts)
	if err != nil {
		return err
	}
	cfg, diags, err := sconfig.Load(sconfig.LoadOptions{Home: loc.home, Workspace: loc.workspace, Env: opts.Env})
	for _, d := range diags {
		fmt.Fprintf(opts.IO.ErrOut, "scv: warning: %s\n", d)
	}
	if err != nil {
		return err
	}
	entries := cfg.Entries(opts.Env)
	imports := importStates(loc.home, opts.Env)
	if opts.JSON {
		out := jsonShow{Workspace: loc.workspace, UserFile: loc.user, ProjectFile: loc.project, Keys: []jsonEntry{}, Warnings: []string{}, Imports: imports}
		for _, e := range entries {
			out.Keys = append(out.Keys, jsonEntry{Key: e.Key, Value: e.Value, Redacted: e.Redacted, EnvSet: e.EnvSet,
				Source: jsonSource{Kind: sourceKinds[e.Source.Kind], File: e.Source.File, Line: e.Source.Line, Env: e.Source.Env}})
		}
		for _, d := range diags {
			out.Warnings = append(out.Warnings, d.String())
		}
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	w := opts.IO.Out
	fmt.Fprintf(w, "Configuration for %s\n", loc.workspace)
	fmt.Fprintf(w, "  user file:    %s (%s)\n", loc.user, exists(loc.user))
	fmt.Fprintf(w, "  project file: %s (%s)\n\n", loc.project, exists(loc.project))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Key, display(e), e.Source)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(imports) > 0 {
		fmt.Fprintln(w, "\nImported agent setups")
		for _, im := range imports {
			fmt.Fprintf(w, "  %s: %s\n", im.Agent, im.State)
		}
	}
	return nil
}

// jsonImport is one imported agent setup (scv agents import) and whether
// its source changed since.
type jsonImport struct {
	Agent    string `json:"agent"`
	UpToDate bool   `json:"up_to_date"`
	State    string `json:"state"`
}

// importStates lists the agents whose setup was imported, in the order
// SCV knows them.
func importStates(home string, env paths.Env) []jsonImport {
	var out []jsonImport
	for _, name := range sconfig.AgentNames() {
		st := signin.CheckImport(home, name, env)
		if st.Imported {
			out = append(out, jsonImport{Agent: name, UpToDate: st.UpToDate, State: st.Summary})
		}
	}
	return out
}

// maxShown bounds a string value in the text output (system_prompt).
const maxShown = 60

// display formats an entry's value for the text output.
func display(e sconfig.Entry) string {
	switch v := e.Value.(type) {
	case map[string]string:
		if len(v) == 0 {
			return "{}"
		}
		parts := make([]string, 0, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			parts = append(parts, fmt.Sprintf("%s = %s", k, v[k]))
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	case string:
		if e.Redacted {
			return v
		}
		s := v
		if cut := textcut.Runes(s, maxShown); cut != s {
			s = cut + "…"
		}
		out := fmt.Sprintf("%q", s)
		if e.EnvSet != nil {
			out += map[bool]string{true: " (set)", false: " (not set)"}[*e.EnvSet]
		}
		return out
	default:
		// A named string type, such as an approval policy or a kind.
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
			return fmt.Sprintf("%q", rv.String())
		}
		return fmt.Sprint(v)
	}
}
