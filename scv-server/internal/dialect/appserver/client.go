package appserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// Client is a small App Server client for tests and the debug command: it
// sends requests, matches their responses, and keeps every other message
// (notifications and server requests) in a backlog that Next reads, so
// nothing that arrives around a response is lost.
type Client struct {
	w      io.Writer
	lines  *lineReader
	mu     sync.Mutex
	nextID int
	// Trace, when set, sees every line in both directions ("<<" is what
	// the client sent, ">>" what the server sent).
	Trace func(dir string, line []byte)

	msgs chan Message // every decoded message, in order
	errc chan error   // the reader's end

	blMu sync.Mutex
	bl   []Message // messages Call skipped over (guarded by blMu)
}

// NewClient starts reading r; the reader goroutine ends with r.
func NewClient(r io.Reader, w io.Writer) *Client {
	c := &Client{w: w, lines: newLineReader(r), msgs: make(chan Message, 1<<16), errc: make(chan error, 1)}
	go c.read()
	return c
}

func (c *Client) read() {
	defer close(c.msgs)
	for {
		line, err := c.lines.next()
		if err != nil {
			c.errc <- err
			return
		}
		if c.Trace != nil {
			c.Trace(">>", line)
		}
		m, _, rerr := Decode(line)
		if rerr != nil {
			c.errc <- fmt.Errorf("the server sent a line that is no JSON-RPC message: %s", line)
			return
		}
		c.msgs <- m
	}
}

// Send writes one raw line.
func (c *Client) Send(line []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Trace != nil {
		c.Trace("<<", line)
	}
	_, err := c.w.Write(append(append([]byte(nil), line...), '\n'))
	return err
}

// Request sends a request and returns its id.
func (c *Client) Request(method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	c.nextID++
	id := json.RawMessage(strconv.Itoa(c.nextID))
	c.mu.Unlock()
	return id, c.send(Message{ID: id, Method: method, Params: mustJSON(params)})
}

// Respond answers a server request.
func (c *Client) Respond(id json.RawMessage, result any) error {
	return c.send(Message{ID: id, Result: mustJSON(result)})
}

// Notify sends a notification.
func (c *Client) Notify(method string, params any) error {
	m := Message{Method: method}
	if params != nil {
		m.Params = mustJSON(params)
	}
	return c.send(m)
}

func (c *Client) send(m Message) error {
	line := encode(m)
	return c.Send(line[:len(line)-1])
}

// Next returns the next message that no Call took, waiting until ctx ends.
func (c *Client) Next(ctx context.Context) (Message, error) {
	c.blMu.Lock()
	if len(c.bl) > 0 {
		m := c.bl[0]
		c.bl = c.bl[1:]
		c.blMu.Unlock()
		return m, nil
	}
	c.blMu.Unlock()
	return c.recv(ctx)
}

func (c *Client) recv(ctx context.Context) (Message, error) {
	select {
	case m, ok := <-c.msgs:
		if !ok {
			err := <-c.errc
			c.errc <- err
			return Message{}, fmt.Errorf("the server's output ended: %w", err)
		}
		return m, nil
	case <-ctx.Done():
		return Message{}, ctx.Err()
	}
}

// Call sends a request and waits for its response; other messages go to
// the backlog. A JSON-RPC error comes back as *RPCError.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	id, err := c.Request(method, params)
	if err != nil {
		return err
	}
	for {
		m, err := c.recv(ctx)
		if err != nil {
			return err
		}
		if m.IsResponse() && string(m.ID) == string(id) {
			if m.Error != nil {
				return m.Error
			}
			if result == nil {
				return nil
			}
			return json.Unmarshal(m.Result, result)
		}
		c.blMu.Lock()
		c.bl = append(c.bl, m)
		c.blMu.Unlock()
	}
}

// Until returns messages from Next until one satisfies stop (included).
func (c *Client) Until(ctx context.Context, stop func(Message) bool) ([]Message, error) {
	var out []Message
	for {
		m, err := c.Next(ctx)
		if err != nil {
			return out, err
		}
		out = append(out, m)
		if stop(m) {
			return out, nil
		}
	}
}

// IsRPCError reports whether err is a JSON-RPC error with code.
func IsRPCError(err error, code int) bool {
	var re *RPCError
	return errors.As(err, &re) && re.Code == code
}
