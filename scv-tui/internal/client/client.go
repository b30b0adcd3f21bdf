// Package client runs `scv-server --stdio` as a child process of the TUI and
// carries protocol frames to and from it. Finding, starting and stopping the
// server, the frames and the exit mapping are shared/client's; this package
// adds what the TUI needs on top: a bounded send queue that never blocks the
// UI, the server's stderr in a log file, restarts, and one channel of
// messages across processes. It decodes what the server writes
// into protocol events and reports everything else (a line that is not an
// event, a frame over the limit, the process exiting) as problems; it never
// interprets events beyond decoding them.
//
// Goroutines: each server process has a waiter (cmd.Wait), a reader of its
// stdout, a copier of its stderr into the log file, a writer of the send
// queue into its stdin and a monitor that reports the exit once the others
// are done. Stopping a process (Close, Restart) joins all of them.
package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	sclient "github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/statefile"
)

// Defaults of Config.
const (
	DefaultQueueSize = 256
	DefaultGrace     = 3 * time.Second
	// LogDirName is the directory under SCV_HOME that holds the TUI's log.
	LogDirName = "logs"
	// LogFileName is the file the server's stderr is appended to.
	LogFileName = "tui-server.log"
)

// Errors of Send.
var (
	ErrNotRunning = errors.New("the server is not running; restart it to go on")
	ErrQueueFull  = errors.New("the server is not reading its input (the send queue is full); wait for it or restart it")
	ErrNotReading = errors.New("the server closed its input and reads no more; restart it to go on")
	ErrClosed     = errors.New("the connection to the server is closed")
)

// Message is one thing the client delivers, in arrival order. Exactly one
// of Started, Event and Err is set.
type Message struct {
	// Started says a new server process is running. It is the first
	// message of every process.
	Started bool
	// Event is one decoded server event.
	Event protocol.Event
	// Err is a problem: a *LineError for output that is not a protocol
	// event, or an *ExitError when Exited is set.
	Err error
	// Exited says the process is gone (it was not stopped by Close or
	// Restart); Err says how it ended.
	Exited bool
}

// Config describes how to run the server.
type Config struct {
	Path      string        // the scv-server binary (shared/client.Finder)
	Args      []string      // its arguments; nil means "--stdio"
	Dir       string        // its working directory: the workspace
	Env       []string      // its environment; nil means this process's
	LogPath   string        // its stderr is appended here; "" discards it
	QueueSize int           // frames the send queue holds; 0 means DefaultQueueSize
	Grace     time.Duration // how long Close waits after closing stdin; 0 means DefaultGrace
	MaxFrame  int           // the longest server frame read; 0 means protocol.MaxServerFrameBytes
}

// Client owns at most one running server process at a time.
type Client struct {
	cfg Config
	out chan Message

	life sync.Mutex // serializes Start, Restart and Close

	mu     sync.Mutex
	cur    *proc
	closed bool
}

// DefaultLogPath is $SCV_HOME/logs/tui-server.log.
func DefaultLogPath(env paths.Env) (string, error) {
	home, err := paths.Home(env)
	if err != nil {
		return "", err
	}
	return filepath.Join(home, LogDirName, LogFileName), nil
}

// New returns a client that has not started a process yet.
func New(cfg Config) *Client {
	if cfg.Args == nil {
		cfg.Args = []string{"--stdio"}
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = protocol.MaxServerFrameBytes
	}
	return &Client{cfg: cfg, out: make(chan Message, 64)}
}

// Messages returns the channel of everything the server processes deliver,
// across restarts. It is closed by Close. Read it promptly: a full channel
// stops reading the server's output.
func (c *Client) Messages() <-chan Message { return c.out }

// LogPath is where the server's stderr goes.
func (c *Client) LogPath() string { return c.cfg.LogPath }

// Start starts a server process. It fails when one is already running.
func (c *Client) Start() error {
	c.life.Lock()
	defer c.life.Unlock()
	return c.start()
}

func (c *Client) start() error {
	c.mu.Lock()
	closed, cur := c.closed, c.cur
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if cur != nil {
		if !cur.gone() {
			return errors.New("the server is already running")
		}
		// It exited on its own; join its goroutines before replacing it.
		_ = cur.stop(context.Background(), c.cfg.Grace)
	}
	p, err := startProc(c.cfg, c.out)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.cur = p
	c.mu.Unlock()
	return nil
}

// Restart stops the current process, if any (as Close does, but the
// client stays usable), and starts a new one. What the old process still
// writes is dropped, and its exit is not reported.
func (c *Client) Restart() error {
	c.life.Lock()
	defer c.life.Unlock()
	c.mu.Lock()
	cur := c.cur
	c.mu.Unlock()
	if cur != nil {
		// Its result is in the log; the user asked for a new server.
		_ = cur.stop(context.Background(), c.cfg.Grace)
	}
	return c.start()
}

// Send queues m for the current process. It never waits for the server.
func (c *Client) Send(m protocol.ClientMessage) error {
	frame, err := sclient.EncodeChecked(m)
	if err != nil {
		return err
	}
	c.mu.Lock()
	p, closed := c.cur, c.closed
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if p == nil {
		return ErrNotRunning
	}
	return p.send(frame)
}

// Close stops the current process: it closes the server's stdin (after the
// frames already queued), waits up to Config.Grace for the server to exit
// (it cancels running turns and exits 0), then kills its process group.
// ctx can cut the wait short. All goroutines have ended when Close returns;
// then Messages is closed. The error says when the server did not end
// cleanly. Close is idempotent.
func (c *Client) Close(ctx context.Context) error {
	c.life.Lock()
	defer c.life.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	cur := c.cur
	c.mu.Unlock()
	var err error
	if cur != nil {
		err = cur.stop(ctx, c.cfg.Grace)
	}
	// Every process's goroutines have joined, so nothing sends any more.
	close(c.out)
	return err
}

// openLog opens the log file for appending, creating its directory 0700
// (statefile.OpenLog: bounded to two generations, never through a link).
func openLog(path string) (*os.File, error) {
	if err := paths.EnsureDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("the server log: %w", err)
	}
	f, err := statefile.OpenLog(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open the server log: %w", err)
	}
	return f, nil
}
