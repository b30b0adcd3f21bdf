package app

import (
	"errors"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/scv-cli/scv/scv-tui/internal/ui/golden"
)

// TestHelpWrapsAtNarrowWidths checks the frame the program draws (View,
// after fit): a terminal cuts lines wider than itself, so every help line
// must be within the width and the log path must be whole once the lines
// are joined (scrolled to the end where the help is taller than the
// screen).
func TestHelpWrapsAtNarrowWidths(t *testing.T) {
	t.Parallel()
	const logPath = "/tmp/audit-home/logs/tui-server-with-a-long-name.log"
	for _, w := range []int{20, 30, 40, 60} {
		h := newHarness(t)
		h.m.opts.LogPath = logPath
		h.connect("gpt-4.1-mini")
		h.msg(tea.WindowSizeMsg{Width: w, Height: 40})
		h.typeText("/help")
		h.key("enter")
		h.key("end") // where the help is taller than the screen, it scrolls
		out := h.m.View().Content
		golden.RequireWidth(t, out, w)
		joined := strings.ReplaceAll(golden.Plain(out), "\n", "")
		if !strings.Contains(joined, logPath) {
			t.Errorf("width %d: the log path is not whole:\n%s", w, golden.Plain(out))
		}
	}
}

// TestConfigErrorShownOnce: a server that refuses its configuration stops
// before the handshake. Its message is shown once, in the problem box (not
// also in the transcript), and nothing says the client is connecting.
func TestConfigErrorShownOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	const cfgErr = `scv-server could not start because of a configuration error:
scv-server: /home/ana/.scv/config.toml:3: unknown key "provider.actve"`
	h.msg(ServerProblem{Err: errors.New(cfgErr), Exited: true})
	out := h.screen()
	if n := strings.Count(out, `unknown key "provider.actve"`); n != 1 {
		t.Errorf("the configuration error is shown %d times:\n%s", n, out)
	}
	if strings.Contains(strings.ToLower(out), "connecting") {
		t.Errorf("the screen says connecting while the server is stopped:\n%s", out)
	}
	status := out[strings.LastIndex(out, "\n")+1:]
	if !strings.Contains(status, "server stopped") || !strings.Contains(status, "Ctrl+R") {
		t.Errorf("status bar %q does not say the server is stopped and how to restart it", status)
	}
	golden.RequirePlain(t, h.m.render())

	// Restarting records the problem in the transcript (it leaves the
	// box), and the bar says the server is starting.
	h.run(h.msg(keyMsg("ctrl+r")))
	out = h.screen()
	if n := strings.Count(out, `unknown key "provider.actve"`); n != 1 {
		t.Errorf("after Ctrl+R the configuration error is shown %d times:\n%s", n, out)
	}
	if h.m.problem != "" {
		t.Errorf("problem box still up after a restart: %q", h.m.problem)
	}
	h.msg(ServerStarted{})
	out = h.screen()
	if status := out[strings.LastIndex(out, "\n")+1:]; strings.Contains(status, "stopped") {
		t.Errorf("a started server is called stopped: %q", status)
	}
	if strings.Contains(out, "The server is stopped") {
		t.Errorf("the editor says the started server is stopped:\n%s", out)
	}
}

type configExit struct{ msg string }

func (e configExit) Error() string     { return e.msg }
func (e configExit) ConfigError() bool { return true }

// TestConfigErrorSaysWhatARestartNeeds: a server that refused its
// configuration (a missing key, say) is not simply restarted: the problem
// says a restart reads the configuration again once it is fixed, and that
// a variable exported elsewhere needs scv started again (issue 21, item 3).
func TestConfigErrorSaysWhatARestartNeeds(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.msg(ServerProblem{Err: configExit{`provider "work" needs an API key in the environment variable WORK_KEY`}, Exited: true})
	out := h.screen()
	for _, want := range []string{"WORK_KEY", "once it is fixed", "started again"} {
		if !strings.Contains(out, want) {
			t.Errorf("the screen lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "press Ctrl+R to restart it") {
		t.Errorf("the problem offers a bare restart:\n%s", out)
	}
}
