package bash

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/scv-cli/scv/scv-server/internal/procgroup"
)

// The login-shell snapshot. The specification runs every command as
// `/bin/bash -lc`, so each call pays for the user's login profile (a
// version manager's init alone costs 0.1–0.5 s). The tool runs the login
// shell once per session instead, records what it leaves (variables,
// exported or not, functions, aliases, shell options, umask) as the
// difference from a plain `bash -c`, and runs each call as a non-login
// `bash -c` whose BASH_ENV is that snapshot: the command sees what a login
// shell would have given it. See docs/tools.md, "The login-shell snapshot".

// DefaultSnapshotTimeout bounds the login shell that makes a snapshot; a
// profile that takes longer is treated as failing, and the session runs
// every command with `bash -lc`.
const DefaultSnapshotTimeout = 10 * time.Second

// snapshotMaxBytes bounds the state a snapshot's shell may write.
const snapshotMaxBytes int64 = 16 << 20

// profileFiles are the files whose change makes the next call take a new
// snapshot: what a login bash reads, and the ~/.bashrc profiles commonly
// source. A path starting with "~/" is under HOME.
var profileFiles = []string{
	"/etc/profile", "/etc/profile.d", "/etc/bash.bashrc",
	"~/.bash_profile", "~/.bash_login", "~/.profile", "~/.bashrc",
}

// skipVars are variables the shell sets for itself, which differ between
// any two shells and must not be carried over (a snapshot restoring PWD,
// SHLVL or the run tag would lie to the command), and BASH_ENV, which the
// snapshot handles on its own.
var skipVars = map[string]bool{
	"_": true, "PWD": true, "OLDPWD": true, "SHLVL": true, "PPID": true,
	"RANDOM": true, "SRANDOM": true, "SECONDS": true, "LINENO": true,
	"EPOCHREALTIME": true, "EPOCHSECONDS": true, "HISTCMD": true,
	"FUNCNAME": true, "GROUPS": true, "DIRSTACK": true, "PIPESTATUS": true,
	"SHELLOPTS": true, "EUID": true, "UID": true, "COMP_WORDBREAKS": true,
	"OPTIND": true, "OPTERR": true, "COLUMNS": true, "LINES": true,
	"HOSTNAME": true, "HOSTTYPE": true, "MACHTYPE": true, "OSTYPE": true,
	procgroup.TagVar: true,
	// bash's own BASH* variables; a user's (BASH_IT) is carried over.
	"BASH": true, "BASHOPTS": true, "BASHPID": true, "BASH_ALIASES": true,
	"BASH_ARGC": true, "BASH_ARGV": true, "BASH_ARGV0": true, "BASH_CMDS": true,
	"BASH_COMMAND": true, "BASH_ENV": true, "BASH_EXECUTION_STRING": true,
	"BASH_LINENO": true, "BASH_REMATCH": true, "BASH_SOURCE": true,
	"BASH_SUBSHELL": true, "BASH_VERSINFO": true, "BASH_VERSION": true,
}

// skipVar reports whether a variable stays out of the snapshot.
func skipVar(name string) bool {
	return skipVars[name] || strings.HasPrefix(name, "__scv_")
}

// dumpScript writes, after the marker ($1), the shell's state as
// NUL-separated sections to the file $2: a file, not the output pipe,
// because bash writes each builtin's output at once, and hundreds of small
// pipe writes each waking the reader cost more than the shell itself.
// Builtins only (no command substitution), so the dump forks nothing.
var dumpScript = func() string {
	var names strings.Builder
	for _, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_" {
		fmt.Fprintf(&names, " ${!%c@}", c)
	}
	return `{
builtin printf '\n%s\0' "$1"
builtin printf 'umask\0'; builtin umask -p; builtin printf '\0'
builtin printf 'opts\0'; builtin shopt -p; builtin set +o; builtin printf '\0'
builtin printf 'funcs\0'; builtin declare -f; builtin printf '\0'
builtin printf 'aliases\0'; builtin alias -p; builtin printf '\0'
for __scv_n in` + names.String() + `; do
builtin printf 'var\0%s\0' "$__scv_n"; builtin declare -p "$__scv_n" 2>/dev/null; builtin printf '\0'
done
builtin printf 'end\0'
} >"$2"
`
}()

// shellState is one dump, parsed.
type shellState struct {
	umask   string
	opts    []string
	funcs   string
	aliases string
	vars    map[string]string
}

// parseDump reads the dump that follows marker in out.
func parseDump(out []byte, marker string) (*shellState, error) {
	i := bytes.Index(out, []byte("\n"+marker+"\x00"))
	if i < 0 {
		return nil, errors.New("the shell ended before printing its state (does the profile call exit?)")
	}
	fields := strings.Split(string(out[i+len(marker)+2:]), "\x00")
	st := &shellState{vars: map[string]string{}}
	for len(fields) > 0 {
		switch key := fields[0]; key {
		case "end":
			return st, nil
		case "umask", "opts", "funcs", "aliases":
			if len(fields) < 2 {
				return nil, errors.New("the shell's state was cut short")
			}
			v := fields[1]
			switch key {
			case "umask":
				st.umask = strings.TrimSpace(v)
			case "opts":
				st.opts = splitLines(v)
			case "funcs":
				st.funcs = v
			case "aliases":
				st.aliases = v
			}
			fields = fields[2:]
		case "var":
			if len(fields) < 3 {
				return nil, errors.New("the shell's state was cut short")
			}
			if d := strings.TrimRight(fields[2], "\n"); d != "" {
				st.vars[fields[1]] = d
			}
			fields = fields[3:]
		default:
			return nil, fmt.Errorf("unexpected section %q in the shell's state", textPrefix(key))
		}
	}
	return nil, errors.New("the shell's state was cut short")
}

func textPrefix(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func splitLines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// renderSnapshot writes the snapshot: what the login shell has that the plain
// shell has not, or has otherwise. It first drops BASH_ENV (which pointed
// at the snapshot itself) and ends by restoring the login shell's own.
func renderSnapshot(login, plain *shellState) []byte {
	var b bytes.Buffer
	b.WriteString("# SCV login-shell snapshot: generated, private to one session.\nbuiltin unset -v BASH_ENV\n")
	for _, name := range slices.Sorted(maps.Keys(login.vars)) {
		if d := login.vars[name]; !skipVar(name) && plain.vars[name] != d {
			b.WriteString(d + "\n")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(plain.vars)) {
		if _, ok := login.vars[name]; !ok && !skipVar(name) {
			fmt.Fprintf(&b, "builtin unset -v %s\n", name)
		}
	}
	if login.funcs != plain.funcs {
		// declare -f follows each exported function with its
		// `declare -fx name`, so the command's children get them too.
		b.WriteString(login.funcs)
	}
	if login.aliases != plain.aliases {
		b.WriteString(login.aliases)
	}
	if login.umask != plain.umask && strings.HasPrefix(login.umask, "umask ") {
		b.WriteString("builtin " + login.umask + "\n")
	}
	seen := make(map[string]bool, len(plain.opts))
	for _, o := range plain.opts {
		seen[o] = true
	}
	for _, o := range login.opts {
		if !seen[o] && !strings.HasSuffix(o, " login_shell") {
			b.WriteString("builtin " + o + "\n")
		}
	}
	if d, ok := login.vars["BASH_ENV"]; ok {
		b.WriteString(d + "\n")
	}
	return b.Bytes()
}

// snapshot is a session's login-shell snapshot: made by the first call,
// remade when a profile file changes, and given up for `bash -lc` when the
// login shell fails.
type snapshot struct {
	timeout time.Duration
	mu      sync.Mutex
	// Guarded by mu: key identifies the profile files the current state
	// was made from; path is the snapshot file ("" after a failure, when
	// calls use bash -lc); dir is a private directory made for it when the
	// session has no state directory.
	key  string
	path string
	made bool
	dir  string
	// warning says why the last attempt failed, for the next call's
	// result (a warm-up has no result of its own to carry it).
	warning string
	// warmCut is set when a warm-up was cut short (its turn ended before
	// the profile did): later warm-ups are skipped, so a profile slower
	// than the session's turns is not started and killed at every turn;
	// the first call takes the snapshot.
	warmCut bool
	// runs counts login shells started for snapshots (tests).
	runs int
}

// prepared is how one call runs its command.
type prepared struct {
	args []string
	env  []string
	// warning is set on the call whose snapshot failed, for its result.
	warning string
}

// prepare returns the arguments and environment of a call: `bash -c`
// with the snapshot, or `bash -lc` when there is none. It takes the
// snapshot when there is none yet or the profile files changed.
func (s *snapshot) prepare(ctx context.Context, env []string, dir, stateDir, command string, lim *procgroup.ProcessLimit) (prepared, error) {
	if s.timeout < 0 {
		return prepared{args: []string{"-lc", command}, env: env}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ensureLocked(ctx, env, dir, stateDir, lim); err != nil {
		return prepared{}, err
	}
	warning := s.warning
	s.warning = ""
	if s.path == "" {
		return prepared{args: []string{"-lc", command}, env: env, warning: warning}, nil
	}
	return prepared{args: []string{"-c", command}, env: append(withoutVar(env, "BASH_ENV"), "BASH_ENV="+s.path)}, nil
}

// warm takes the snapshot ahead of the first call (Tool.Warm). A call
// arriving meanwhile waits for it on the lock rather than running the
// profile a second time; a warm-up cut short by ctx leaves the snapshot to
// be taken by the call, and no other warm-up starts in the session.
func (s *snapshot) warm(ctx context.Context, env []string, dir, stateDir string, lim *procgroup.ProcessLimit) {
	if s.timeout < 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.warmCut {
		return
	}
	if err := s.ensureLocked(ctx, env, dir, stateDir, lim); err != nil {
		s.warmCut = true
	}
}

// ensureLocked takes the snapshot when there is none yet or the profile
// files changed. A failing login shell leaves the session on `bash -lc`,
// with a warning for the next call's result; only ctx's end is an error,
// and leaves the state as it was. s.mu is held.
func (s *snapshot) ensureLocked(ctx context.Context, env []string, dir, stateDir string, lim *procgroup.ProcessLimit) error {
	key := profileKey(env)
	if s.made && key == s.key {
		return nil
	}
	if err := s.take(ctx, env, dir, stateDir, lim); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.path = ""
		s.warning = fmt.Sprintf("[the login profile could not be captured (%v); this session runs each command with bash -lc, which reads the profile every time, until a profile file changes]", err)
	}
	s.key, s.made = key, true
	return nil
}

// take runs the plain and the login shell, and writes the snapshot.
func (s *snapshot) take(ctx context.Context, env []string, dir, stateDir string, lim *procgroup.ProcessLimit) error {
	s.runs++
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	// The two shells are independent: run side by side, the snapshot costs
	// the login shell's time rather than the sum (a session's first call
	// with an empty profile: 16 ms -> 10 ms on 2 cores). A failure of
	// either stops the other.
	var plain *shellState
	var plainErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if plain, plainErr = dumpShell(ctx, env, dir, "-c", lim); plainErr != nil {
			cancel()
		}
	}()
	login, err := dumpShell(ctx, env, dir, "-lc", lim)
	if err != nil {
		cancel()
	}
	<-done
	switch {
	case plainErr != nil && (err == nil || errors.Is(err, context.Canceled)):
		return plainErr
	case err != nil:
		return err
	}
	return s.write(stateDir, renderSnapshot(login, plain))
}

// dumpShell runs the dump in `bash flag` and parses it.
func dumpShell(ctx context.Context, env []string, dir, flag string, lim *procgroup.ProcessLimit) (*shellState, error) {
	marker := "SCV-SNAPSHOT-" + uuid.NewString()
	f, err := os.CreateTemp("", "scv-shell-state-*")
	if err != nil {
		return nil, fmt.Errorf("a file for the shell's state: %w", err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	_ = f.Close()
	st, err := procgroup.Run(ctx, procgroup.Command{
		Path: Shell, Args: []string{flag, dumpScript, Shell, marker, f.Name()},
		Dir: dir, Env: env, Limit: lim, PipeGrace: 50 * time.Millisecond,
	})
	switch {
	case err != nil:
		return nil, err
	case st.Cancelled && ctx.Err() == context.DeadlineExceeded:
		return nil, errors.New("the login shell did not finish in time; is the profile waiting for input or the network?")
	case st.Cancelled:
		return nil, ctx.Err()
	}
	out, err := readBounded(f.Name(), snapshotMaxBytes)
	if err != nil {
		return nil, err
	}
	return parseDump(out, marker)
}

// readBounded reads the file at path, refusing one larger than max.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the shell's state: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading the shell's state: %w", err)
	case int64(len(b)) > max:
		return nil, fmt.Errorf("the shell's state is larger than %d MiB", max>>20)
	}
	return b, nil
}

// write replaces the snapshot file with data (mode 0600 in a 0700
// directory): in the session's state directory, or in a private
// temporary directory when the session keeps no state. The file is a
// cache, remade from the profile when lost, so it is not fsynced.
func (s *snapshot) write(stateDir string, data []byte) error {
	dir := s.dir
	if stateDir != "" {
		dir = filepath.Join(stateDir, "shell")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("snapshot directory: %w", err)
		}
	} else if dir == "" {
		d, err := os.MkdirTemp("", "scv-shell-")
		if err != nil {
			return fmt.Errorf("snapshot directory: %w", err)
		}
		s.dir, dir = d, d
		runtime.AddCleanup(s, func(d string) { _ = os.RemoveAll(d) }, d)
	}
	f, err := os.CreateTemp(dir, ".login-*.sh")
	if err != nil {
		return fmt.Errorf("snapshot file: %w", err)
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	path := filepath.Join(dir, "login.sh")
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("snapshot file: %w", werr)
	}
	s.path = path
	return nil
}

// profileKey identifies the current version of the profile files (and of
// the file BASH_ENV names): their size, modification time and inode.
func profileKey(env []string) string {
	home := envValue(env, "HOME")
	var b strings.Builder
	files := profileFiles
	if be := envValue(env, "BASH_ENV"); be != "" {
		files = append(files[:len(files):len(files)], be)
	}
	for _, f := range files {
		if rest, ok := strings.CutPrefix(f, "~/"); ok {
			if home == "" {
				continue
			}
			f = filepath.Join(home, rest)
		}
		b.WriteString(f)
		if fi, err := os.Stat(f); err == nil {
			b.WriteString(" " + strconv.FormatInt(fi.Size(), 10) + " " + strconv.FormatInt(fi.ModTime().UnixNano(), 10))
			if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
				b.WriteString(" " + strconv.FormatUint(sys.Ino, 10))
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

func withoutVar(env []string, name string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
