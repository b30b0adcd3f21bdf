package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"
	"github.com/scv-cli/scv/scv-tui/internal/app"
	"github.com/scv-cli/scv/scv-tui/internal/client"
	"github.com/scv-cli/scv/scv-tui/internal/history"
	"github.com/scv-cli/scv/shared/cli"
	sclient "github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/statefile"
)

// closeTimeout bounds the shutdown of the server after the UI has ended:
// client.Close waits client.DefaultGrace for a clean exit, then kills.
const closeTimeout = 10 * time.Second

// RunTUI runs the terminal UI on this process's terminal with f.
func RunTUI(ctx context.Context, f Flags) error {
	if !term.IsTerminal(os.Stdout.Fd()) || !term.IsTerminal(os.Stdin.Fd()) {
		return errors.New("the terminal UI needs a terminal on stdin and stdout; run `scv exec PROMPT` for one turn without one")
	}
	s, err := setup(f, paths.OSEnv())
	if err != nil {
		return err
	}
	defer s.closeLog()
	s.signals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}
	return s.run(ctx, os.Stdin, os.Stdout)
}

// session is everything one run of the UI owns.
type session struct {
	flags   Flags
	logPath string
	logFile *os.File // the TUI's own diagnostics, beside the server's stderr
	log     *slog.Logger
	hist    app.History
	client  *client.Client
	// newModel builds the program's model; tests replace it.
	newModel func(app.Options) tea.Model
	// signals quit the program as /quit does (the exit code is then
	// cli.Interrupted). In raw mode Ctrl+C is a key, not a SIGINT.
	signals   []os.Signal
	signalled atomic.Bool
	// theme is SCV_THEME: "", "dark" or "light".
	theme string
}

// setup finds the server and prepares the log and the history; nothing is
// started yet.
func setup(f Flags, env paths.Env) (*session, error) {
	serverPath, err := sclient.Finder{Self: "scv-tui", Getenv: env.Getenv}.Find(sclient.Server)
	if err != nil {
		return nil, err
	}
	s := &session{flags: f, logPath: f.LogFile, newModel: func(o app.Options) tea.Model { return app.New(o) }}
	switch s.theme = env.Getenv("SCV_THEME"); s.theme {
	case "", app.ThemeDark, app.ThemeLight:
	default:
		return nil, fmt.Errorf("SCV_THEME is %q: set it to dark or light, or unset it to let scv detect the terminal's background", s.theme)
	}
	if s.logPath == "" {
		if s.logPath, err = client.DefaultLogPath(env); err != nil {
			return nil, err
		}
	}
	if err := paths.EnsureDir(filepath.Dir(s.logPath)); err != nil {
		return nil, fmt.Errorf("the log file: %w", err)
	}
	s.logFile, err = statefile.OpenLog(s.logPath)
	if err != nil {
		return nil, fmt.Errorf("cannot open the log file: %w", err)
	}
	// The terminal belongs to the UI: the TUI's own messages go to the
	// log file too.
	s.log = slog.New(slog.NewTextHandler(s.logFile, &slog.HandlerOptions{Level: slog.LevelInfo})).With("who", "scv-tui")
	if home, err := paths.Home(env); err != nil {
		s.log.Warn("no prompt history", "err", err)
	} else if h, err := history.Open(home, f.Dir); err != nil {
		s.log.Warn("no prompt history", "err", err)
	} else {
		s.hist = h // only a non-nil *Store goes into the interface
	}
	args, err := serverArgs(f, env, s.log)
	if err != nil {
		s.closeLog()
		return nil, err
	}
	s.client = client.New(client.Config{
		Path:    serverPath,
		Args:    args,
		Dir:     f.Dir,
		LogPath: s.logPath,
	})
	return s, nil
}

// serverArgs are the server's arguments: `connect`, a relay to the daemon's
// socket, when daemon.use (or --daemon) says so and a daemon runs (the
// session then lives in the daemon and outlives the UI); otherwise nil, a
// server of its own. Its error is daemon.use = "always" with no daemon.
func serverArgs(f Flags, env paths.Env, log *slog.Logger) ([]string, error) {
	if f.NoDaemon {
		return nil, nil
	}
	home, err := paths.Home(env)
	if err != nil {
		// The server of its own says what is wrong with SCV_HOME.
		log.Info("no SCV_HOME; starting a server of its own", "err", err)
		return nil, nil
	}
	use := config.DaemonAuto
	if !f.Daemon {
		use = sclient.ConfiguredDaemonUse(home, env)
	}
	info, ok, err := sclient.ChooseDaemon(use, home)
	if err != nil {
		return nil, err
	}
	if ok {
		log.Info("using the daemon", "pid", info.Pid, "socket", info.Socket)
		return []string{"connect"}, nil
	}
	log.Info("starting a server of its own", "daemon.use", use)
	return nil, nil
}

func (s *session) closeLog() {
	if s.logFile != nil {
		_ = s.logFile.Close()
	}
}

// run starts the server, runs the program until the user quits, and shuts
// the server down. The terminal is restored on every way out, a panic
// included.
func (s *session) run(ctx context.Context, in io.Reader, out io.Writer) (err error) {
	if err := s.client.Start(); err != nil {
		return err
	}
	// Keep the terminal's state to put it back even if the program could
	// not (a panic outside its own recovery).
	if f, ok := in.(*os.File); ok {
		if st, err := term.GetState(f.Fd()); err == nil {
			defer func() { _ = term.Restore(f.Fd(), st) }()
		}
	}

	pu := newPump(s.client)
	var (
		p        *tea.Program
		final    tea.Model
		pumping  bool
		panicked any
	)
	func() {
		defer func() {
			if r := recover(); r != nil {
				panicked = r
				s.log.Error("panic", "value", fmt.Sprint(r), "stack", string(debug.Stack()))
				if p != nil {
					p.Kill()
				}
			}
		}()
		model := s.newModel(app.Options{
			Send:      s.client.Send,
			Restart:   s.client.Restart,
			Workspace: s.flags.Dir,
			LogPath:   s.logPath,
			History:   s.hist,
			Resume:    s.flags.Resume,
			Attach:    s.flags.Attach,
			Model:     s.flags.Model,
			Prompt:    s.flags.Prompt,
			Theme:     s.theme,
		})
		p = tea.NewProgram(model, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out), tea.WithoutSignalHandler())
		pumping = true
		go pu.run(p.Send, p.Kill)
		stopSignals := s.quitOnSignal(p)
		final, err = p.Run()
		stopSignals()
	}()

	// The UI is gone; shut the server down (stdin closed, then killed
	// after the grace) and wait for the pump to drain.
	cctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if cerr := s.client.Close(cctx); cerr != nil {
		s.log.Warn("server shutdown", "err", cerr)
	}
	if pumping {
		pu.wait()
	}
	if r := pu.panicked(); r != nil && panicked == nil {
		panicked = r
	}

	if panicked != nil {
		return cli.Exitf(cli.Failure,
			"internal error (a bug): %v\nThe terminal was restored and the server was shut down. The details are in %s; please report them.",
			panicked, s.logPath)
	}
	switch {
	case errors.Is(err, tea.ErrProgramPanic):
		return cli.Exitf(cli.Failure,
			"internal error (a bug): the terminal UI crashed (the trace is above). The terminal was restored and the server was shut down; the server's log is %s.",
			s.logPath)
	case err == nil && s.signalled.Load():
		return cli.WithCode(cli.Interrupted, nil)
	case errors.Is(err, tea.ErrInterrupted):
		return cli.WithCode(cli.Interrupted, nil)
	case errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil:
		return cli.WithCode(cli.Interrupted, nil)
	case err != nil:
		return fmt.Errorf("the terminal UI failed: %w", err)
	}
	// The user quit while the server was down: say why once more, now
	// that the screen is back, for a configuration error above all.
	if ee := pu.lastExit(); ee != nil {
		return &cli.ExitError{Code: cli.Failure, Err: ee}
	}
	// The alternate screen is gone with the transcript: leave the session's
	// id and how to resume it in the scrollback.
	if sm, ok := final.(interface{ ExitSummary() string }); ok {
		if text := sm.ExitSummary(); text != "" {
			_, _ = io.WriteString(out, text)
		}
	}
	return nil
}

// quitOnSignal quits p gracefully (so the terminal is restored and the
// server shut down) when one of s.signals arrives. The returned function
// stops listening and waits for the listener to end.
func (s *session) quitOnSignal(p *tea.Program) (stop func()) {
	if len(s.signals) == 0 {
		return func() {}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, s.signals...)
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		select {
		case sig := <-ch:
			s.log.Info("quitting on a signal", "signal", sig.String())
			s.signalled.Store(true)
			p.Quit()
		case <-done:
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
		<-ended
	}
}

// pump carries the client's messages into the program.
type pump struct {
	c    *client.Client
	done chan struct{}

	mu    sync.Mutex
	exit  *client.ExitError // how the current server ended, nil while one runs
	panic any
}

func newPump(c *client.Client) *pump {
	return &pump{c: c, done: make(chan struct{})}
}

// run delivers until the client's channel is closed (by Close). A panic
// kills the program, so the terminal is restored, and is kept for the
// report.
func (pu *pump) run(send func(tea.Msg), kill func()) {
	defer close(pu.done)
	defer func() {
		if r := recover(); r != nil {
			pu.mu.Lock()
			pu.panic = fmt.Sprintf("%v\n%s", r, debug.Stack())
			pu.mu.Unlock()
			kill()
			// Drain, so the client can still shut down.
			for range pu.c.Messages() {
			}
		}
	}()
	for m := range pu.c.Messages() {
		send(translate(m, pu.record))
	}
}

// record keeps how the current server process is doing.
func (pu *pump) record(m client.Message) {
	pu.mu.Lock()
	defer pu.mu.Unlock()
	var ee *client.ExitError
	switch {
	case m.Started:
		pu.exit = nil
	case m.Exited && errors.As(m.Err, &ee):
		pu.exit = ee
	}
}

func (pu *pump) wait() { <-pu.done }

func (pu *pump) panicked() any {
	pu.mu.Lock()
	defer pu.mu.Unlock()
	return pu.panic
}

func (pu *pump) lastExit() *client.ExitError {
	pu.mu.Lock()
	defer pu.mu.Unlock()
	return pu.exit
}

// translate turns a client message into the app's message.
func translate(m client.Message, record func(client.Message)) tea.Msg {
	if record != nil {
		record(m)
	}
	switch {
	case m.Started:
		return app.ServerStarted{}
	case m.Event != nil:
		return app.ServerEvent{Event: m.Event}
	default:
		return app.ServerProblem{Err: m.Err, Exited: m.Exited}
	}
}
