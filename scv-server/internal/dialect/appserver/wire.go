package appserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// The framing: JSON-RPC 2.0, one message per line. It knows nothing of
// the methods; server.go dispatches decoded messages.

// MaxLineBytes bounds one incoming message; a longer line is answered
// with -32600 and skipped.
const MaxLineBytes = 10 << 20

// JSON-RPC and App Server error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
	// CodeOverloaded answers new requests while the client is not reading
	// what the server already has for it.
	CodeOverloaded = -32001
	// CodeNotFound: no such thread.
	CodeNotFound = -32002
	// CodeNotInitialized: a request before initialize.
	CodeNotInitialized = -32003
	// CodeNoActiveTurn: turn/steer, turn/followUp or turn/interrupt with
	// no turn running.
	CodeNoActiveTurn = -32030
	// CodeStaleTurn: expectedTurnId is not the running turn.
	CodeStaleTurn = -32031
)

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

func rpcErrorf(code int, format string, args ...any) *RPCError {
	return &RPCError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Message is one JSON-RPC message in either direction.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// IsRequest reports whether m is a request (it has a method and an id).
func (m *Message) IsRequest() bool { return m.Method != "" && m.ID != nil }

// IsNotification reports whether m is a notification.
func (m *Message) IsNotification() bool { return m.Method != "" && m.ID == nil }

// IsResponse reports whether m answers a server request.
func (m *Message) IsResponse() bool { return m.Method == "" && m.ID != nil }

// envelope is what Decode reads first, to tell absent fields from null.
type envelope struct {
	JSONRPC *string `json:"jsonrpc"`
	// ID is a plain RawMessage so that null is kept ("null"), where a
	// pointer would be nil as if the id were absent.
	ID     json.RawMessage  `json:"id"`
	Method *json.RawMessage `json:"method"`
	Params *json.RawMessage `json:"params"`
	Result *json.RawMessage `json:"result"`
	Error  *json.RawMessage `json:"error"`
}

// Decode parses one line. A line that is no JSON-RPC message returns an
// error to answer with (its id is the message's when it has a usable one,
// else null). "jsonrpc" may be absent (lenient with hand-written lines)
// but, when present, must be "2.0".
func Decode(line []byte) (Message, json.RawMessage, *RPCError) {
	line = bytes.TrimSpace(line)
	if !json.Valid(line) {
		return Message{}, nil, rpcErrorf(CodeParseError, "Parse error: the line is not valid JSON; send one JSON-RPC 2.0 object per line")
	}
	if line[0] != '{' {
		if line[0] == '[' {
			return Message{}, nil, rpcErrorf(CodeInvalidRequest, "Invalid request: batches are not supported; send one JSON-RPC 2.0 object per line")
		}
		return Message{}, nil, rpcErrorf(CodeInvalidRequest, "Invalid request: send a JSON-RPC 2.0 object")
	}
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		return Message{}, nil, rpcErrorf(CodeInvalidRequest, "Invalid request: the message does not have the shape of a JSON-RPC 2.0 message: %v", err)
	}
	id := validID(env.ID)
	if env.Method == nil && env.Error != nil && bytes.Equal(bytes.TrimSpace(env.ID), nullID) {
		// An error answering a message that had no usable id.
		var e RPCError
		if json.Unmarshal(*env.Error, &e) != nil {
			return Message{}, nil, rpcErrorf(CodeInvalidRequest, `Invalid request: "error" must be a JSON-RPC error object`)
		}
		return Message{JSONRPC: "2.0", ID: nullID, Error: &e}, nil, nil
	}
	if env.ID != nil && id == nil {
		return Message{}, nil, rpcErrorf(CodeInvalidRequest, `Invalid request: "id" must be a string or a number`)
	}
	if env.JSONRPC != nil && *env.JSONRPC != "2.0" {
		return Message{}, id, rpcErrorf(CodeInvalidRequest, `Invalid request: "jsonrpc" must be "2.0"`)
	}
	m := Message{JSONRPC: "2.0", ID: id}
	if env.Method != nil {
		if json.Unmarshal(*env.Method, &m.Method) != nil || m.Method == "" {
			return Message{}, id, rpcErrorf(CodeInvalidRequest, `Invalid request: "method" must be a non-empty string`)
		}
		if env.Params != nil {
			p := bytes.TrimSpace(*env.Params)
			if len(p) > 0 && p[0] != '{' && p[0] != '[' && !bytes.Equal(p, []byte("null")) {
				return Message{}, id, rpcErrorf(CodeInvalidParams, `Invalid params: "params" must be an object`)
			}
			m.Params = p
		}
		return m, id, nil
	}
	if id != nil && (env.Result != nil || env.Error != nil) {
		if env.Result != nil {
			m.Result = *env.Result
		}
		if env.Error != nil {
			var e RPCError
			if json.Unmarshal(*env.Error, &e) != nil {
				return Message{}, id, rpcErrorf(CodeInvalidRequest, `Invalid request: "error" must be a JSON-RPC error object`)
			}
			m.Error = &e
		}
		return m, id, nil
	}
	return Message{}, id, rpcErrorf(CodeInvalidRequest, `Invalid request: the message has no "method" and is no response`)
}

// validID returns raw when it is a usable id (a string or a number).
func validID(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return nil
	}
	switch c := t[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return append(json.RawMessage(nil), t...)
	}
	return nil
}

// lineReader reads lines of at most MaxLineBytes.
type lineReader struct {
	r *bufio.Reader
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// errTooLong reports a line over MaxLineBytes, which was skipped.
var errTooLong = errors.New("line too long")

// next returns the next non-empty line without its newline. At the end of
// input it returns the last unterminated line, then io.EOF.
func (l *lineReader) next() ([]byte, error) {
	for {
		var line []byte
		var err error
		for {
			var chunk []byte
			chunk, err = l.r.ReadSlice('\n')
			if len(line)+len(chunk) > MaxLineBytes+1 {
				for errors.Is(err, bufio.ErrBufferFull) {
					_, err = l.r.ReadSlice('\n')
				}
				if err != nil && !errors.Is(err, io.EOF) {
					return nil, err
				}
				return nil, errTooLong
			}
			line = append(line, chunk...)
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			return t, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// outbox is the connection's ordered, bounded output queue. Notifications
// and server requests wait for room below limit (so a client that stops
// reading holds up the turns instead of growing memory); responses may
// use reserve slots beyond it, so requests are still answered (with
// -32001 when the queue is full) while notifications wait.
type outbox struct {
	limit, reserve int

	mu     sync.Mutex
	items  [][]byte
	change chan struct{} // closed and replaced on every change
	closed bool
}

func newOutbox(limit, reserve int) *outbox {
	return &outbox{limit: limit, reserve: reserve, change: make(chan struct{})}
}

func (o *outbox) signalLocked() {
	close(o.change)
	o.change = make(chan struct{})
}

// full reports whether notifications have no room.
func (o *outbox) full() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.items) >= o.limit
}

// put queues b, waiting for room until ctx ends; response selects the
// reserve. It returns false when ctx ended or the outbox closed first.
func (o *outbox) put(ctx context.Context, b []byte, response bool) bool {
	bound := o.limit
	if response {
		bound += o.reserve
	}
	for {
		o.mu.Lock()
		if o.closed {
			o.mu.Unlock()
			return false
		}
		if len(o.items) < bound {
			o.items = append(o.items, b)
			o.signalLocked()
			o.mu.Unlock()
			return true
		}
		ch := o.change
		o.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// take returns the next message, waiting until there is one; nil once the
// outbox is closed and empty, or ctx ended.
func (o *outbox) take(ctx context.Context) []byte {
	for {
		o.mu.Lock()
		if len(o.items) > 0 {
			b := o.items[0]
			o.items[0] = nil
			o.items = o.items[1:]
			o.signalLocked()
			o.mu.Unlock()
			return b
		}
		if o.closed {
			o.mu.Unlock()
			return nil
		}
		ch := o.change
		o.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil
		}
	}
}

// close stops new messages; take drains what is queued.
func (o *outbox) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.closed = true
		o.signalLocked()
	}
}

// encode marshals one outgoing message as a line.
func encode(m Message) []byte {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		// Only a result of an unmarshalable type gets here: a bug.
		b, _ = json.Marshal(Message{JSONRPC: "2.0", ID: m.ID, Error: rpcErrorf(CodeInternal, "Internal error: encoding the answer failed: %v", err)})
	}
	return append(b, '\n')
}

// nullID is the id of an error answering a message without a usable id.
var nullID = json.RawMessage("null")
