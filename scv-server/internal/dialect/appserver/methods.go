package appserver

import (
	"errors"
	"fmt"
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/shared/protocol"
)

// dispatch runs one request and returns its result or error. A nil result
// and nil error means the answer comes later (turn/start answers when its
// turn has started, before turn/started).
func (c *conn) dispatch(m Message) (any, error) {
	if m.Method == "initialize" {
		return c.initialize(m)
	}
	if !c.initialized.Load() {
		return nil, rpcErrorf(CodeNotInitialized, "Not initialized: send initialize before %s", m.Method)
	}
	h, ok := methods[m.Method]
	if !ok {
		return nil, rpcErrorf(CodeMethodNotFound, "Method not found: %q is no App Server method (see docs/app-server.md)", m.Method)
	}
	if h.threads && c.opts.Host == nil {
		return nil, rpcErrorf(CodeMethodNotFound, "Method not found: this server runs no threads (threadLifecycle is false)")
	}
	return h.run(c, m)
}

// handler is one method.
type handler struct {
	threads bool // needs the thread lifecycle
	run     func(c *conn, m Message) (any, error)
}

// typed adapts a method with typed params.
func typed[P any](f func(c *conn, m Message, p P) (any, error)) func(c *conn, m Message) (any, error) {
	return func(c *conn, m Message) (any, error) {
		var p P
		if err := decodeParams(m.Params, &p); err != nil {
			return nil, err
		}
		return f(c, m, p)
	}
}

// methods are the client requests, by method.
var methods map[string]handler

func init() {
	methods = map[string]handler{
		"thread/start":       {true, typed((*conn).threadStart)},
		"thread/resume":      {true, typed((*conn).threadResume)},
		"thread/read":        {true, typed((*conn).threadRead)},
		"thread/list":        {true, typed((*conn).threadList)},
		"thread/unsubscribe": {true, typed((*conn).threadUnsubscribe)},
		"turn/start":         {true, typed((*conn).turnStart)},
		"turn/steer":         {true, typed((*conn).turnSteer)},
		"turn/followUp":      {true, typed((*conn).turnFollowUp)},
		"turn/interrupt":     {true, typed((*conn).turnInterrupt)},
		"approval/resolve":   {true, typed((*conn).approvalResolve)},
		"model/list":         {false, typed((*conn).modelList)},
		"schema/export":      {false, typed((*conn).schemaExport)},
	}
}

// ClientMethods lists the client request methods (for the schema).
func ClientMethods() []string {
	out := []string{"initialize"}
	for k := range methods {
		out = append(out, k)
	}
	return out
}

// initialize answers the handshake; a second one is refused.
func (c *conn) initialize(m Message) (any, error) {
	var p InitializeParams
	if err := decodeParams(m.Params, &p); err != nil {
		return nil, err
	}
	if c.initialized.Load() {
		return nil, rpcErrorf(CodeInvalidRequest, "Invalid request: initialize was already sent on this connection")
	}
	c.mu.Lock()
	c.optOut = map[string]bool{}
	if p.Capabilities != nil {
		for _, method := range p.Capabilities.OptOutNotificationMethods {
			c.optOut[method] = true
		}
	}
	if p.ClientInfo != nil {
		c.clientName = p.ClientInfo.Name
	}
	c.mu.Unlock()
	c.initialized.Store(true)
	if p.ClientInfo != nil {
		c.log.Info("App Server client initialized", "client", p.ClientInfo.Name, "client_version", p.ClientInfo.Version)
	}
	threads := c.opts.Host != nil
	return InitializeResult{UserAgent: UserAgent, ProtocolVersion: ProtocolVersion, Capabilities: ServerCapabilities{
		ModelList: true, ThreadLifecycle: threads, NotificationOptOut: true, SchemaExport: true, ApprovalResolve: threads,
	}}, nil
}

func (c *conn) submitter() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clientName == "" {
		return "app-server"
	}
	return c.clientName
}

func (c *conn) modelList(_ Message, _ EmptyParams) (any, error) {
	models := []Model{}
	if c.opts.Host != nil {
		models = append(models, c.opts.Host.Models(c.ctx)...)
	}
	return ModelListResult{Models: models}, nil
}

func (c *conn) schemaExport(_ Message, _ EmptyParams) (any, error) {
	b, err := Bundle()
	if err != nil {
		return nil, fmt.Errorf("generating the schema: %w", err)
	}
	return b, nil
}

// inputText joins a turn's input items; only text items are accepted.
func inputText(in []InputItem) (string, error) {
	if len(in) == 0 {
		return "", rpcErrorf(CodeInvalidParams, "Invalid params: input needs at least one item, such as {\"type\":\"text\",\"text\":\"...\"}")
	}
	text, err := joinInput(in)
	if err != nil {
		return "", err
	}
	if err := session.CheckPrompt(text); err != nil {
		return "", mapErr(err)
	}
	return text, nil
}

// joinInput joins text items with blank lines; other items are refused.
func joinInput(in []InputItem) (string, error) {
	parts := make([]string, 0, len(in))
	for i, it := range in {
		if it.Type != "text" {
			return "", rpcErrorf(CodeInvalidParams, "Invalid params: input item %d has type %q; SCV takes text items only", i, it.Type)
		}
		parts = append(parts, it.Text)
	}
	return strings.Join(parts, "\n\n"), nil
}

// mapErr maps the runtime's errors to JSON-RPC errors.
func mapErr(err error) error {
	var re *RPCError
	if errors.As(err, &re) {
		return re
	}
	var se *session.Error
	if !errors.As(err, &se) {
		return &RPCError{Code: CodeInternal, Message: err.Error()}
	}
	code := CodeInternal
	switch se.Code {
	case protocol.ErrInvalidRequest, protocol.ErrQueueFull:
		code = CodeInvalidParams
	case protocol.ErrSessionNotFound:
		code = CodeNotFound
	}
	return &RPCError{Code: code, Message: se.Message, Data: map[string]any{"code": string(se.Code)}}
}
