package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/scv-cli/scv/shared/cli"
	sclient "github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/textcut"
)

// drainGrace is how long the monitor waits, after the server has exited,
// for its stdout and stderr to reach end of file. A grandchild that kept
// them open would otherwise block the reader forever.
const drainGrace = 2 * time.Second

// proc is one server process (started and stopped by shared/client) and
// the goroutines that carry its frames.
type proc struct {
	sp      *sclient.Process
	conn    *sclient.Conn
	logPath string
	out     chan<- Message

	log *os.File // nil when stderr is discarded

	mu       sync.Mutex
	stopping bool        // set once; the queue is closed then
	queue    chan []byte // frames for the writer

	abort    chan struct{}   // closed when stopping: deliveries are dropped
	exited   <-chan struct{} // the Process's Exited
	readDone chan struct{}
	errDone  chan struct{}
	wrDone   chan struct{} // closed when the writer has ended
	done     chan struct{} // closed when every goroutine has ended
	tail     tailBuffer    // the end of stderr, for the exit message

	exitedFirst bool // it exited before stop began; read after done
}

// startProc starts the server and its goroutines.
func startProc(cfg Config, out chan<- Message) (p *proc, err error) {
	p = &proc{
		logPath:  cfg.LogPath,
		out:      out,
		queue:    make(chan []byte, cfg.QueueSize),
		abort:    make(chan struct{}),
		readDone: make(chan struct{}),
		errDone:  make(chan struct{}),
		wrDone:   make(chan struct{}),
		done:     make(chan struct{}),
	}
	var closers []*os.File
	defer func() {
		if err != nil {
			for _, f := range closers {
				_ = f.Close()
			}
		}
	}()
	if cfg.LogPath != "" {
		if p.log, err = openLog(cfg.LogPath); err != nil {
			return nil, err
		}
		closers = append(closers, p.log)
	}
	// Its own process group (shared/client): a Ctrl+C on the terminal
	// reaches only the TUI, which shuts the server down itself; and Close
	// can kill the server together with anything it started. Its stderr
	// is a pipe this package copies into the log.
	sp, err := sclient.Start(sclient.Command{Path: cfg.Path, Args: cfg.Args, Dir: cfg.Dir, Env: cfg.Env})
	if err != nil {
		return nil, err
	}
	p.sp, p.exited = sp, sp.Exited()
	p.conn = sclient.NewConn(sp.Stream(), cfg.MaxFrame)
	p.logf("started %s %s in %s (pid %d)", cfg.Path, strings.Join(cfg.Args, " "), cfg.Dir, sp.Pid())

	go p.copyStderr()
	go p.write()
	go func() {
		// The first message of the process; the reader and then the
		// monitor are its only other senders.
		p.deliver(Message{Started: true})
		p.read()
	}()
	go p.monitor()
	return p, nil
}

// logf writes one line of the TUI's own into the log, between the
// server's lines. Only the stderr copier writes there otherwise, and each
// write is one append, so lines do not interleave.
func (p *proc) logf(format string, args ...any) {
	if p.log == nil {
		return
	}
	line := fmt.Sprintf("scv-tui %s: %s\n", time.Now().Format(time.RFC3339), fmt.Sprintf(format, args...))
	_, _ = p.log.WriteString(line)
}

// gone reports whether the process has exited or is being stopped.
func (p *proc) gone() bool {
	select {
	case <-p.exited:
		return true
	default:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopping
}

// deliver sends m unless the process is being stopped.
func (p *proc) deliver(m Message) {
	select {
	case <-p.abort:
		return
	default:
	}
	select {
	case p.out <- m:
	case <-p.abort:
	}
}

// read decodes stdout until end of file. It keeps reading while the
// process is being stopped, so a server that writes its last events on
// the way out is never blocked on a full pipe.
func (p *proc) read() {
	defer close(p.readDone)
	for {
		f, err := p.conn.Read()
		if err != nil {
			// io.EOF, or the pipe closed by the monitor.
			return
		}
		var big *protocol.ErrFrameTooLarge
		switch {
		case errors.As(f.Err, &big):
			p.deliver(Message{Err: &LineError{Size: big.Size, Limit: big.Limit, Err: f.Err}})
		case f.Err != nil:
			p.deliver(Message{Err: &LineError{Line: clip(f.Raw), Size: len(f.Raw), Err: f.Err}})
		default:
			p.deliver(Message{Event: f.Event})
		}
	}
}

// copyStderr appends stderr to the log and keeps its end for the exit
// message.
func (p *proc) copyStderr() {
	defer close(p.errDone)
	buf := make([]byte, 32<<10)
	for {
		n, err := p.sp.Stderr.Read(buf)
		if n > 0 {
			p.tail.Write(buf[:n])
			if p.log != nil {
				_, _ = p.log.Write(buf[:n])
			}
		}
		if err != nil {
			return
		}
	}
}

// write copies queued frames into stdin. It closes stdin when the queue
// is closed (after the frames queued before), when a write fails (the
// server is gone) or when the process has exited.
func (p *proc) write() {
	defer close(p.wrDone)
	defer func() { _ = p.sp.CloseStdin() }()
	for {
		select {
		case frame, ok := <-p.queue:
			if !ok {
				return
			}
			if err := p.conn.WriteFrames(frame); err != nil {
				return
			}
		case <-p.exited:
			return
		}
	}
}

// send queues one frame.
func (p *proc) send(frame []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return ErrNotRunning
	}
	select {
	case <-p.exited:
		return ErrNotRunning
	default:
	}
	select {
	case <-p.wrDone:
		// The writer ends on a failed write, or when the process exits
		// (checked again: it may have exited since).
		select {
		case <-p.exited:
			return ErrNotRunning
		default:
		}
		return ErrNotReading
	default:
	}
	select {
	case p.queue <- frame:
		return nil
	default:
		return ErrQueueFull
	}
}

// monitor waits for the exit and the end of the output, then reports the
// exit unless the process was stopped on purpose.
func (p *proc) monitor() {
	defer close(p.done)
	<-p.exited
	timer := time.NewTimer(drainGrace)
	defer timer.Stop()
	for _, ch := range []chan struct{}{p.readDone, p.errDone} {
		select {
		case <-ch:
		case <-timer.C:
			// Something the server started still holds the pipes; end
			// the group and stop reading.
			p.logf("scv-server (pid %d) exited, but its output is still open after %s; killing its process group", p.sp.Pid(), drainGrace)
			p.sp.KillGroup()
			p.closeOutput()
			<-p.readDone
			<-p.errDone
		}
	}
	<-p.wrDone
	p.closeOutput()
	ee := p.exitError()
	p.logf("scv-server (pid %d) %s", p.sp.Pid(), ee.status())
	if p.log != nil {
		_ = p.log.Close()
	}
	p.deliver(Message{Err: ee, Exited: true})
}

// closeOutput closes the read ends of the server's stdout and stderr,
// which ends the reader and the stderr copier.
func (p *proc) closeOutput() {
	_ = p.sp.Stdout.Close()
	_ = p.sp.Stderr.Close()
}

// exitError describes how the process ended, from shared/client's exit
// mapping plus the end of its stderr and where the log is. Call it after
// exited.
func (p *proc) exitError() *ExitError {
	ee := &ExitError{Stderr: p.tail.Lines(maxStderrLines), LogPath: p.logPath}
	var xe *sclient.ExitError
	if err := p.sp.ExitError(); errors.As(err, &xe) {
		ee.Code, ee.Signal = xe.Code, xe.Signal
		if xe.State == nil {
			ee.Err = xe.Err
		}
	}
	return ee
}

// stop ends the process as Close describes and joins its goroutines.
func (p *proc) stop(ctx context.Context, grace time.Duration) error {
	p.mu.Lock()
	first := !p.stopping
	if first {
		p.stopping = true
		select {
		case <-p.exited:
			p.exitedFirst = true
		default:
		}
		close(p.queue)
		close(p.abort)
	}
	p.mu.Unlock()
	if !first {
		<-p.done
		return nil
	}
	// The writer closes stdin after the frames queued before; then the
	// Process gives the server what is left of the grace to exit, and
	// kills its group after it (or when ctx ends).
	deadline := time.Now().Add(grace)
	sctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	select {
	case <-p.wrDone:
	case <-p.exited:
	case <-sctx.Done():
	}
	err := p.sp.Stop(sctx, time.Until(deadline))
	<-p.done
	switch {
	case p.exitedFirst:
		// Its exit was reported when it happened.
		return nil
	case errors.Is(err, sclient.ErrKilled):
		return fmt.Errorf("scv-server did not exit within %s of its input closing, so it was killed", grace)
	}
	if ee := p.exitError(); ee.Code != 0 {
		return ee
	}
	return nil
}

// LineError is server output that is not a protocol event: a line that
// is not JSON, an event of an unknown type or with a malformed field, or a
// frame over the size limit.
type LineError struct {
	Line  string // the start of the line ("" for an oversized frame)
	Size  int    // its size in bytes
	Limit int    // the frame limit, for an oversized frame
	Err   error
}

func (e *LineError) Error() string {
	if e.Limit > 0 {
		return fmt.Sprintf("the server sent a frame of %d bytes, over the %d-byte limit; it was skipped", e.Size, e.Limit)
	}
	return fmt.Sprintf("the server sent a line that is not a valid protocol event (%v): %q", e.Err, e.Line)
}

func (e *LineError) Unwrap() error { return e.Err }

// maxLineShown bounds the part of a bad line kept in a LineError.
const maxLineShown = 200

func clip(b []byte) string {
	if len(b) <= maxLineShown {
		return string(b)
	}
	// The %q of Error shows any invalid byte of the line as an escape.
	return string(textcut.Prefix(b, maxLineShown)) + "..."
}

// ExitError says how the server process ended.
type ExitError struct {
	Code    int    // exit status, -1 when it was killed by a signal or could not be waited for
	Signal  string // the signal that killed it, if one did
	Stderr  string // the last lines it wrote on stderr
	LogPath string // where all of its stderr is
	Err     error  // why it could not be waited for, if so
}

func (e *ExitError) status() string {
	switch {
	case e.Signal != "":
		return "was killed by signal " + e.Signal
	case e.Code >= 0:
		return fmt.Sprintf("exited with status %d", e.Code)
	case e.Err != nil:
		return fmt.Sprintf("ended (%v)", e.Err)
	}
	return "ended"
}

// ConfigError reports whether the server refused its configuration; then
// Stderr is its message.
func (e *ExitError) ConfigError() bool { return e.Code == int(cli.Config) }

func (e *ExitError) Error() string {
	var b strings.Builder
	if e.ConfigError() {
		b.WriteString("scv-server could not start because of a configuration error")
	} else {
		b.WriteString("scv-server " + e.status())
	}
	if e.Stderr != "" {
		b.WriteString(":\n" + e.Stderr)
	} else if e.LogPath != "" {
		b.WriteString("; see " + e.LogPath)
	}
	return b.String()
}

func (e *ExitError) Unwrap() error { return e.Err }

// maxStderrLines is how much of stderr an ExitError shows.
const maxStderrLines = 20

// tailBuffer keeps the last tailBytes of what is written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 8 << 10

func (t *tailBuffer) Write(b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > tailBytes {
		// Cut where a character starts, so the tail does not begin with
		// the end of one (shown as a replacement character).
		t.buf = append(t.buf[:0], textcut.Suffix(t.buf, tailBytes)...)
	}
}

// Lines returns the last n complete or partial lines, trimmed, as valid
// UTF-8.
func (t *tailBuffer) Lines(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := bytes.TrimRight(t.buf, "\r\n\t ")
	lines := bytes.Split(s, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.ToValidUTF8(string(bytes.Join(lines, []byte("\n"))), "\uFFFD")
}
