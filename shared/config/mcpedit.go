package config

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/statefile"
)

// AddMCPServer appends the table [mcp_servers.<name>] holding s to the
// user file of home, atomically. The file must load before and after: an
// existing server of that name, or a table that would not validate, is an
// error and the file is left as it was. Only the fields s sets (and
// enabled = false) are written, so defaults stay defaults.
func AddMCPServer(home, name string, s MCPServer, env paths.Env) error {
	exists := func(cfg *Config, file string) error {
		if _, ok := cfg.MCPServers[name]; ok {
			return fmt.Errorf("an MCP server named %q is already configured in %s; remove it first with `scv mcp remove %s`", name, file, name)
		}
		return nil
	}
	return appendTable(home, "mcp_servers."+tomlKey(name), exists, env, func(b *strings.Builder) { writeMCPServer(b, s) })
}

// appendTable appends the table [header], written by body, to the user
// file of home, atomically: the file must load before (and exists must
// accept it) and after.
func appendTable(home, header string, exists func(*Config, string) error, env paths.Env, body func(*strings.Builder)) error {
	file := paths.ConfigFile(home)
	old, mode, err := readUserFile(home)
	if err != nil {
		return err
	}
	cfg, _, err := Load(LoadOptions{Home: home, Env: env})
	if err != nil {
		return fmt.Errorf("the configuration does not load, so it was not changed; fix it first: %w", err)
	}
	if err := exists(cfg, file); err != nil {
		return err
	}
	var b strings.Builder
	b.Write(old)
	if len(old) > 0 && !strings.HasSuffix(string(old), "\n") {
		b.WriteByte('\n')
	}
	if len(old) > 0 {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[%s]\n", header)
	body(&b)
	return replaceChecked(home, file, old, []byte(b.String()), mode, env)
}

// writeMCPServer writes the fields s sets (and enabled = false), so
// defaults stay defaults.
func writeMCPServer(b *strings.Builder, s MCPServer) {
	str := func(k, v string) {
		if v != "" {
			fmt.Fprintf(b, "%s = %s\n", k, tomlString(v))
		}
	}
	list := func(k string, vs []string) {
		if len(vs) > 0 {
			q := make([]string, len(vs))
			for i, v := range vs {
				q[i] = tomlString(v)
			}
			fmt.Fprintf(b, "%s = [%s]\n", k, strings.Join(q, ", "))
		}
	}
	table := func(k string, m map[string]string) {
		if len(m) > 0 {
			var q []string
			for _, n := range slices.Sorted(maps.Keys(m)) {
				q = append(q, tomlKey(n)+" = "+tomlString(m[n]))
			}
			fmt.Fprintf(b, "%s = { %s }\n", k, strings.Join(q, ", "))
		}
	}
	str("command", s.Command)
	list("args", s.Args)
	table("env", s.Env)
	str("cwd", s.Cwd)
	str("url", s.URL)
	table("headers", s.Headers)
	if !s.Enabled {
		b.WriteString("enabled = false\n")
	}
	d := DefaultMCPServer()
	if s.StartupTimeoutSeconds != 0 && s.StartupTimeoutSeconds != d.StartupTimeoutSeconds {
		fmt.Fprintf(b, "startup_timeout_seconds = %d\n", s.StartupTimeoutSeconds)
	}
	if s.ToolTimeoutSeconds != 0 && s.ToolTimeoutSeconds != d.ToolTimeoutSeconds {
		fmt.Fprintf(b, "tool_timeout_seconds = %d\n", s.ToolTimeoutSeconds)
	}
	list("enabled_tools", s.EnabledTools)
	list("disabled_tools", s.DisabledTools)
}

// RemoveMCPServer removes the table [mcp_servers.<name>] (and its
// subtables) from the user file of home, atomically. A server defined
// some other way (dotted keys, an inline table) is left for the user to
// edit, with an error saying so.
func RemoveMCPServer(home, name string, env paths.Env) error {
	return removeTable(home, []string{"mcp_servers", name}, "MCP server", env)
}

// removeTable removes the table prefix (and its subtables) from the user
// file of home, atomically; noun names what the table is in messages
// ("MCP server").
func removeTable(home string, prefix []string, noun string, env paths.Env) error {
	name, table := prefix[len(prefix)-1], strings.Join(prefix, ".")
	file := paths.ConfigFile(home)
	old, mode, err := readUserFile(home)
	if err != nil {
		return err
	}
	ix := indexKeys(old)
	if !ix.complete {
		return fmt.Errorf("%s is not valid TOML, so it was not changed; fix it first (scv config show says where)", file)
	}
	start := -1
	for i, e := range ix.entries {
		if e.table && slices.Equal(e.path, prefix) {
			start = i
			break
		}
	}
	if start < 0 {
		if ix.has(prefix...) {
			return fmt.Errorf("the %s %q is not written as a [%s] table in %s; remove it there by hand", noun, name, table, file)
		}
		return fmt.Errorf("no %s named %q is configured in %s", noun, name, file)
	}
	end := len(ix.entries)
	for i := start + 1; i < len(ix.entries); i++ {
		if e := ix.entries[i]; e.table && !hasPrefix(e.path, prefix) {
			end = i
			break
		}
	}
	for i, e := range ix.entries {
		if (i < start || i >= end) && hasPrefix(e.path, prefix) {
			return fmt.Errorf("the %s %q is also set outside its table in %s (line %d); remove it there by hand", noun, name, file, e.line)
		}
	}
	lines := strings.SplitAfter(string(old), "\n")
	first := ix.entries[start].line - 1
	last := len(lines)
	if end < len(ix.entries) {
		last = ix.entries[end].line - 1
		// Comments and blank lines just above the next table stay with it.
		for last > first+1 && isCommentOrBlank(lines[last-1]) {
			last--
		}
	}
	// No blank line left doubled (or trailing) where the table was.
	for first > 0 && strings.TrimSpace(lines[first-1]) == "" && (last >= len(lines) || strings.TrimSpace(lines[last]) == "") {
		first--
	}
	out := strings.Join(append(slices.Clone(lines[:first]), lines[last:]...), "")
	return replaceChecked(home, file, old, []byte(out), mode, env)
}

func isCommentOrBlank(line string) bool {
	t := strings.TrimSpace(line)
	return t == "" || strings.HasPrefix(t, "#")
}

// readUserFile reads the user file of home as Load does (readLayer): a
// symbolic link is followed, but a FIFO or device in its place is refused
// rather than read (it would hang the command), and the file is bounded
// by MaxFileSize. A missing file reads as empty, mode 0600.
func readUserFile(home string) ([]byte, fs.FileMode, error) {
	l, err := readLayer(SourceUser, home, paths.ConfigFileName, statefile.AnyLinks)
	switch {
	case err != nil:
		return nil, 0, err
	case l == nil:
		return nil, 0o600, nil
	}
	return l.data, l.mode.Perm(), nil
}

// replaceChecked writes data to the user file and loads the result,
// putting old back when it does not load. A config.toml that is a
// symbolic link (into a dotfiles checkout, say) is written where it
// points: an atomic replace of the link itself would cut it off.
func replaceChecked(home, file string, old, data []byte, mode fs.FileMode, env paths.Env) error {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	target := file
	if fi, err := os.Lstat(file); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if target, err = filepath.EvalSymlinks(file); err != nil {
			return fmt.Errorf("%s is a symbolic link that cannot be followed (%w); fix or remove the link, then try again", file, err)
		}
	}
	if err := atomicfile.WriteFile(target, data, mode); err != nil {
		return fmt.Errorf("cannot write %s: %w", target, err)
	}
	if _, _, err := Load(LoadOptions{Home: home, Env: env}); err != nil {
		if old == nil {
			_ = os.Remove(target)
		} else if rerr := atomicfile.WriteFile(target, old, mode); rerr != nil {
			return fmt.Errorf("the change made the configuration invalid (%w), and putting the old file back failed: %w", err, rerr)
		}
		return fmt.Errorf("the change was not made, since the configuration would not load: %w", err)
	}
	return nil
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlKey is k bare when TOML allows it, else quoted.
func tomlKey(k string) string {
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return tomlString(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}
