package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// MaxLineBytes bounds one JSON-RPC message, the same 10 MiB the SDK's
// reader takes; a longer line is answered with an error and skipped.
const MaxLineBytes = 10 << 20

// lineWriter serializes whole lines onto the output: the SDK writes each
// message with one Write, and the gate's error answers go through the same
// lock, so lines never interleave.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// gate sits between the transport and the SDK's reader. The SDK drops a
// line it cannot decode without a word to the client (and ends the
// connection at a line over its buffer), where JSON-RPC wants an answer:
// the gate answers bad JSON with -32700, a batch or a message that is no
// request, notification or response with -32600, and a line over
// MaxLineBytes with -32600, and hands every other line on unchanged.
type gate struct {
	// ready holds the first Read back until the connection is set up: the
	// SDK starts reading as soon as it is created, before its logger is
	// set, and setting it later would race with its reader's logging.
	ready chan struct{}
	r     *bufio.Reader
	out   io.Writer // answers to rejected lines
	buf   []byte    // the rest of the line being handed over
	err   error     // the input's end, returned once buf is empty
}

func newGate(r io.Reader, out io.Writer) *gate {
	return &gate{ready: make(chan struct{}), r: bufio.NewReaderSize(r, 64<<10), out: out}
}

// Read hands over accepted lines, each ending in a newline.
func (g *gate) Read(p []byte) (int, error) {
	<-g.ready
	for len(g.buf) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		line, err := g.readLine()
		if err != nil {
			g.err = err
		}
		if line == nil {
			continue
		}
		if answer := check(line); answer != nil {
			if _, werr := g.out.Write(answer); werr != nil {
				g.err = werr
			}
			continue
		}
		g.buf = append(line, '\n')
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

// readLine returns the next line without its newline; nil for an empty
// line, or for one over MaxLineBytes after answering it. At the end of
// the input it returns the last unterminated line with the error.
func (g *gate) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := g.r.ReadSlice('\n')
		if len(line)+len(chunk) > MaxLineBytes+1 {
			// Too long: answer once and skip to the end of the line.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = g.r.ReadSlice('\n')
			}
			if _, werr := g.out.Write(errorLine(nil, -32600, "Invalid request",
				fmt.Sprintf("the message is longer than %d bytes; send smaller messages (put large content in a file and send a resource_link)", MaxLineBytes))); werr != nil {
				return nil, werr
			}
			return nil, err
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			return nil, err
		}
		return line, err
	}
}

// envelope is what check reads of a message.
type envelope struct {
	JSONRPC *string          `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id"`
	Method  *json.RawMessage `json:"method"`
	Result  *json.RawMessage `json:"result"`
	Error   *json.RawMessage `json:"error"`
}

// check returns the error line that answers a rejected message, or nil
// when the SDK should take it.
func check(line []byte) []byte {
	if !json.Valid(line) {
		return errorLine(nil, -32700, "Parse error", "the line is not valid JSON; send one JSON-RPC 2.0 object per line")
	}
	trimmed := bytes.TrimSpace(line)
	if trimmed[0] != '{' {
		what := "a JSON-RPC 2.0 object"
		if trimmed[0] == '[' {
			what = "one JSON-RPC 2.0 object per line: batches are not supported"
		}
		return errorLine(nil, -32600, "Invalid request", "send "+what)
	}
	var env envelope
	if err := json.Unmarshal(trimmed, &env); err != nil {
		return errorLine(nil, -32600, "Invalid request", "the message does not have the shape of a JSON-RPC 2.0 message: "+err.Error())
	}
	id := validID(env.ID)
	if env.JSONRPC == nil || *env.JSONRPC != "2.0" {
		return errorLine(id, -32600, "Invalid request", `"jsonrpc" must be "2.0"`)
	}
	if env.ID != nil && id == nil {
		return errorLine(nil, -32600, "Invalid request", `"id" must be a string, a number or null`)
	}
	if env.Method != nil {
		var m string
		if json.Unmarshal(*env.Method, &m) != nil || m == "" {
			return errorLine(id, -32600, "Invalid request", `"method" must be a non-empty string`)
		}
		return nil
	}
	if env.ID != nil && (env.Result != nil || env.Error != nil) {
		return nil // a response to one of the agent's requests
	}
	return errorLine(id, -32600, "Invalid request", `the message has no "method" and is no response`)
}

// validID returns raw when it is a valid JSON-RPC id (string, number or
// null), else nil.
func validID(raw *json.RawMessage) json.RawMessage {
	if raw == nil {
		return nil
	}
	t := bytes.TrimSpace(*raw)
	if len(t) == 0 {
		return nil
	}
	switch c := t[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9', bytes.Equal(t, []byte("null")):
		return t
	}
	return nil
}

// errorLine encodes a JSON-RPC error answer; a nil id is sent as null.
func errorLine(id json.RawMessage, code int, message, detail string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    any    `json:"data,omitempty"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}{Code: code, Message: message + ": " + detail}})
	return append(b, '\n')
}
