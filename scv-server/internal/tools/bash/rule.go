package bash

import (
	"regexp"
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/tools"
)

// Session approval rules of bash (protocol v3). A rule allows the commands
// that start with some leading words: "bash:go test" covers "go test ./..."
// and "go test -run X", not "go build". The rule proposed for a command
// names its program, plus the subcommand for a program that has
// subcommands (multiCommand); a call's keys are every such prefix of it,
// so a rule "bash:go" would cover "go test" too.
//
// A rule only means something when the leading words are the program that
// runs, and when nothing else runs. So a command gets no rule, and no key
// (it asks every time), when it
//
//   - holds a control operator or anything that runs or chains another
//     command: ; & | (so && || |&), a newline, ` $( ${ $[ (command and
//     arithmetic substitution), or < > (redirections, process
//     substitution): "go test ./... && rm -rf ~" must not pass as
//     "go test". These characters are refused wherever they are, quoted
//     or not, which is stricter than needed (git commit -m "a; b" asks).
//     The only exceptions are the standalone words in harmlessRedirects
//     (2>&1 and redirections to /dev/null), which write nowhere;
//   - starts with a variable assignment (FOO=1 go test), a shell keyword
//     (if, for, !, [[ …), or a word that is not a plain name or path
//     (quotes, $, globs, ~, backslashes);
//   - starts with a program that runs another command or the shell
//     itself (sudo, env, exec, eval, xargs, timeout, nohup, bash -c, …):
//     "bash:sudo" or "bash:env" would allow anything;
//   - starts with a multi-command program whose second word is not a plain
//     subcommand (git -C dir commit, go --help): it gets keys, but no rule
//     is proposed, since the program alone would be far broader than what
//     the user was shown.

// multiCommand are programs whose first argument is a subcommand: their
// rules name both words.
var multiCommand = setOf(
	"go", "git", "gh", "hg", "svn",
	"npm", "npx", "pnpm", "yarn", "bun", "deno",
	"cargo", "rustup",
	"pip", "pip3", "poetry", "uv", "pipenv", "conda", "hatch", "pdm", "tox", "nox",
	"docker", "podman", "kubectl", "helm", "terraform", "tofu",
	"make", "gmake", "just", "task", "mvn", "gradle", "./gradlew", "./mvnw", "bazel", "bazelisk",
	"dotnet", "swift", "zig", "stack", "cabal", "mix", "rebar3", "bundle", "rake", "rails", "composer",
	"brew", "apt", "apt-get", "dnf", "yum", "pacman", "systemctl", "journalctl",
	"aws", "gcloud", "az",
)

// wrappers run another command, or arbitrary shell code, or change the
// shell itself; a rule for them would allow anything.
var wrappers = setOf(
	"sudo", "doas", "su", "runuser", "pkexec", "sg",
	"env", "exec", "command", "builtin", "eval", "source", ".", "enable",
	"alias", "trap", "let", "declare", "typeset", "export", "readonly", "local", "set", "shopt", "coproc", "fc",
	"nohup", "nice", "ionice", "chrt", "taskset", "timeout", "stdbuf", "unbuffer", "setsid", "flock",
	"xargs", "parallel", "watch", "strace", "ltrace", "chroot", "unshare", "nsenter", "systemd-run", "script",
	"bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "busybox",
)

// keywords are shell reserved words; a command starting with one is not
// a simple command.
var keywords = setOf(
	"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done",
	"case", "esac", "select", "function", "time", "in", "!", "[[", "]]", "{", "}",
)

// operators are the substrings that make a command more than one simple
// command (or let it run another one).
var operators = []string{";", "&", "|", "\n", "`", "$(", "${", "$[", "<", ">"}

// harmlessRedirects are redirections that write no file, allowed as
// standalone words of a command that has a rule.
var harmlessRedirects = setOf("2>&1", ">/dev/null", "1>/dev/null", "2>/dev/null", "&>/dev/null")

var (
	programWord    = regexp.MustCompile(`^[A-Za-z0-9._/][A-Za-z0-9._+/@:-]*$`)
	subcommandWord = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+:@-]*$`)
)

// maxRuleKey bounds a rule key; a longer program path gets no rule.
const maxRuleKey = 200

// sessionRule returns the rule a session approval of command would grant,
// or nil, and the keys of the rules that cover command.
func sessionRule(command string) (*tools.Rule, []string) {
	for _, r := range command {
		if (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f {
			return nil, nil
		}
	}
	var words []string
	for _, w := range strings.FieldsFunc(command, func(r rune) bool { return r == ' ' || r == '\t' }) {
		if !harmlessRedirects[w] {
			words = append(words, w)
		}
	}
	rest := strings.Join(words, " ")
	for _, op := range operators {
		if strings.Contains(rest, op) {
			return nil, nil
		}
	}
	if len(words) == 0 {
		return nil, nil
	}
	prog := words[0]
	if !programWord.MatchString(prog) || wrappers[prog] || keywords[prog] || len(prog) > maxRuleKey {
		return nil, nil
	}
	progKey := "bash:" + prog
	if !multiCommand[prog] {
		return &tools.Rule{Key: progKey, Description: describe(prog)}, []string{progKey}
	}
	if len(words) < 2 || !subcommandWord.MatchString(words[1]) || len(prog)+len(words[1]) > maxRuleKey {
		return nil, []string{progKey}
	}
	lead := prog + " " + words[1]
	key := "bash:" + lead
	return &tools.Rule{Key: key, Description: describe(lead)}, []string{key, progKey}
}

func describe(lead string) string {
	return "bash commands that start with `" + lead + "`"
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
