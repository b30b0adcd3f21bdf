package acp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/shared/protocol"
)

// Error codes beyond JSON-RPC's own.
const (
	codeAuthRequired     = -32000
	codeResourceNotFound = -32002
)

// noProviderMessage is the auth_required message when no provider is set.
const noProviderMessage = "SCV has no model provider configured, so it cannot start a session. " +
	"Add one to ~/.scv/config.toml ([provider] active = \"NAME\" and a [providers.NAME] table with kind, base_url, model and api_key_env; " +
	"see docs/configuration.md), check it with `scv config show`, then restart the agent"

// modes are the session modes: SCV's approval policies.
var modes = []acpsdk.SessionMode{
	{Id: "on-risk", Name: "Ask", Description: acpsdk.Ptr("Read-only tools run; SCV asks before anything else")},
	{Id: "never", Name: "Read-only", Description: acpsdk.Ptr("Read-only tools run; everything else is refused without asking")},
	{Id: "auto", Name: "Full access", Description: acpsdk.Ptr("Every tool runs without asking; for trusted workspaces only")},
}

// modeConfigID is the config option of the mode.
const modeConfigID = "mode"

func modeState(current string) *acpsdk.SessionModeState {
	return &acpsdk.SessionModeState{CurrentModeId: acpsdk.SessionModeId(current), AvailableModes: append([]acpsdk.SessionMode{}, modes...)}
}

// modelConfigID is the config option of the model.
const modelConfigID = "model"

// configOptions are the session's options: the mode, and the model when
// the provider lists models (models not empty).
func configOptions(mode, model string, models []string) []acpsdk.SessionConfigOption {
	opts := acpsdk.SessionConfigSelectOptionsUngrouped{}
	for _, m := range modes {
		opts = append(opts, acpsdk.SessionConfigSelectOption{Value: acpsdk.SessionConfigValueId(m.Id), Name: m.Name, Description: m.Description})
	}
	o := acpsdk.NewSessionConfigOptionSelect(acpsdk.SessionConfigValueId(mode), acpsdk.SessionConfigSelectOptions{Ungrouped: &opts})
	o.Select.Id = modeConfigID
	o.Select.Name = "Approval mode"
	o.Select.Category = acpsdk.Ptr(acpsdk.SessionConfigOptionCategoryMode)
	out := []acpsdk.SessionConfigOption{o}
	if len(models) == 0 {
		return out
	}
	choices := acpsdk.SessionConfigSelectOptionsUngrouped{}
	// The current model is a choice even when the listing misses it (a
	// configured alias, say), so the option's value is always one of them.
	if !slices.Contains(models, model) {
		choices = append(choices, acpsdk.SessionConfigSelectOption{Value: acpsdk.SessionConfigValueId(model), Name: model})
	}
	for _, id := range models {
		choices = append(choices, acpsdk.SessionConfigSelectOption{Value: acpsdk.SessionConfigValueId(id), Name: id})
	}
	mo := acpsdk.NewSessionConfigOptionSelect(acpsdk.SessionConfigValueId(model), acpsdk.SessionConfigSelectOptions{Ungrouped: &choices})
	mo.Select.Id = modelConfigID
	mo.Select.Name = "Model"
	mo.Select.Category = acpsdk.Ptr(acpsdk.SessionConfigOptionCategoryModel)
	return append(out, mo)
}

// models lists the provider's models; nil when it lists none.
func (a *agent) models(ctx context.Context) []string {
	if a.opts.Models == nil {
		return nil
	}
	return a.opts.Models(ctx)
}

// sessionOptions are st's config options now.
func (a *agent) sessionOptions(ctx context.Context, st *attached) []acpsdk.SessionConfigOption {
	return configOptions(string(st.s.Policy()), st.s.Model(), a.models(ctx))
}

// initialize answers with version 1, SCV's name and version and what it
// supports. A client asking for another version gets 1, the only one.
func (a *agent) initialize(_ context.Context, p acpsdk.InitializeRequest) (acpsdk.InitializeResponse, error) {
	if p.ClientInfo != nil {
		a.mu.Lock()
		a.clientName = p.ClientInfo.Name
		a.mu.Unlock()
		a.log.Info("ACP client initialized", "client", p.ClientInfo.Name, "client_version", p.ClientInfo.Version, "protocol_version", p.ProtocolVersion)
	}
	auth := []acpsdk.AuthMethod{}
	if a.opts.NoProvider {
		auth = append(auth, acpsdk.AuthMethod{Agent: &acpsdk.AuthMethodAgent{Id: "configure-provider", Name: "Configure a model provider",
			Description: acpsdk.Ptr("Add a provider to ~/.scv/config.toml (see docs/configuration.md), then restart the agent")}})
	}
	return acpsdk.InitializeResponse{
		ProtocolVersion: ProtocolVersion,
		AgentInfo:       &acpsdk.Implementation{Name: "scv", Title: acpsdk.Ptr("SCV"), Version: Version()},
		AgentCapabilities: acpsdk.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: acpsdk.PromptCapabilities{EmbeddedContext: true},
			SessionCapabilities: acpsdk.SessionCapabilities{
				List:   &acpsdk.SessionListCapabilities{},
				Resume: &acpsdk.SessionResumeCapabilities{},
				Close:  &acpsdk.SessionCloseCapabilities{},
			},
		},
		AuthMethods: auth,
	}, nil
}

// authenticate has nothing to do: SCV's credentials are in its
// configuration. Without a provider it says how to configure one.
func (a *agent) authenticate(context.Context, acpsdk.AuthenticateRequest) (acpsdk.AuthenticateResponse, error) {
	if a.opts.NoProvider {
		return acpsdk.AuthenticateResponse{}, &acpsdk.RequestError{Code: codeAuthRequired, Message: noProviderMessage}
	}
	return acpsdk.AuthenticateResponse{}, nil
}

func (a *agent) needProvider() error {
	if a.opts.NoProvider {
		return &acpsdk.RequestError{Code: codeAuthRequired, Message: noProviderMessage}
	}
	return nil
}

// newSession starts a session in cwd.
func (a *agent) newSession(ctx context.Context, p acpsdk.NewSessionRequest) (acpsdk.NewSessionResponse, error) {
	if err := a.needProvider(); err != nil {
		return acpsdk.NewSessionResponse{}, err
	}
	a.warnMCP(p.McpServers)
	st, err := a.start(session.StartOptions{Cwd: p.Cwd})
	if err != nil {
		return acpsdk.NewSessionResponse{}, err
	}
	return acpsdk.NewSessionResponse{SessionId: acpsdk.SessionId(st.s.ID()), Modes: modeState(string(st.s.Policy())), ConfigOptions: a.sessionOptions(ctx, st)}, nil
}

func (a *agent) warnMCP(servers []acpsdk.McpServer) {
	if len(servers) > 0 {
		a.log.Warn("The client sent MCP servers; SCV does not connect to MCP servers, so they are ignored", "count", len(servers))
	}
}

// start starts (or resumes) a session at protocol version 3 and attaches
// to it.
func (a *agent) start(opts session.StartOptions) (*attached, error) {
	opts.ProtocolVersion = protocol.Version3
	s, err := a.mgr.Start(opts)
	if err != nil {
		return nil, mapErr(err)
	}
	st, err := a.attach(s)
	if err != nil {
		_ = a.mgr.CloseSession(a.ctx, s.ID())
		return nil, err
	}
	return st, nil
}

// attach subscribes the connection to s.
func (a *agent) attach(s *session.Session) (*attached, error) {
	a.mu.Lock()
	if st, ok := a.sessions[s.ID()]; ok {
		a.mu.Unlock()
		return st, nil
	}
	a.mu.Unlock()
	st := newAttached(a, s)
	unsub, err := s.Subscribe(a.ctx, st)
	if err != nil {
		return nil, mapErr(err)
	}
	st.unsubscribe = unsub
	a.mu.Lock()
	a.sessions[s.ID()] = st
	a.mu.Unlock()
	return st, nil
}

// loadSession opens a stored session and replays its history as updates
// before answering.
func (a *agent) loadSession(ctx context.Context, p acpsdk.LoadSessionRequest) (acpsdk.LoadSessionResponse, error) {
	if err := a.needProvider(); err != nil {
		return acpsdk.LoadSessionResponse{}, err
	}
	a.warnMCP(p.McpServers)
	if a.session(string(p.SessionId)) != nil {
		return acpsdk.LoadSessionResponse{}, &acpsdk.RequestError{Code: -32602,
			Message: fmt.Sprintf("session %s is open on this connection already, and its history was sent then; keep using it, or session/close it before loading it again", p.SessionId)}
	}
	s, err := a.mgr.Start(session.StartOptions{Cwd: p.Cwd, Resume: string(p.SessionId), ProtocolVersion: protocol.Version3})
	if err != nil {
		return acpsdk.LoadSessionResponse{}, mapErr(err)
	}
	for _, up := range replay(s.Cwd(), s.TakeReplay()) {
		if err := a.conn.SessionUpdate(ctx, acpsdk.SessionNotification{SessionId: p.SessionId, Update: up}); err != nil {
			_ = a.mgr.CloseSession(a.ctx, s.ID())
			return acpsdk.LoadSessionResponse{}, fmt.Errorf("sending the history of session %s: %w", p.SessionId, err)
		}
	}
	st, err := a.attach(s)
	if err != nil {
		_ = a.mgr.CloseSession(a.ctx, s.ID())
		return acpsdk.LoadSessionResponse{}, err
	}
	return acpsdk.LoadSessionResponse{Modes: modeState(string(st.s.Policy())), ConfigOptions: a.sessionOptions(ctx, st)}, nil
}

// resumeSession reattaches to a session without replaying it: one open
// in this server, or a stored one.
func (a *agent) resumeSession(ctx context.Context, p acpsdk.ResumeSessionRequest) (acpsdk.ResumeSessionResponse, error) {
	if err := a.needProvider(); err != nil {
		return acpsdk.ResumeSessionResponse{}, err
	}
	a.warnMCP(p.McpServers)
	var st *attached
	if s, err := a.mgr.Get(string(p.SessionId)); err == nil {
		if st, err = a.attach(s); err != nil {
			return acpsdk.ResumeSessionResponse{}, err
		}
	} else {
		if st, err = a.start(session.StartOptions{Cwd: p.Cwd, Resume: string(p.SessionId)}); err != nil {
			return acpsdk.ResumeSessionResponse{}, err
		}
		st.s.TakeReplay() // not replayed: the client has the history
	}
	return acpsdk.ResumeSessionResponse{Modes: modeState(string(st.s.Policy())), ConfigOptions: a.sessionOptions(ctx, st)}, nil
}

// listSessions lists the stored sessions of cwd, newest first, in one page.
func (a *agent) listSessions(_ context.Context, p acpsdk.ListSessionsRequest) (acpsdk.ListSessionsResponse, error) {
	if p.Cwd == nil || *p.Cwd == "" {
		return acpsdk.ListSessionsResponse{}, &acpsdk.RequestError{Code: -32602, Message: "session/list needs cwd: SCV lists the sessions of one workspace, so send its absolute path"}
	}
	out := acpsdk.ListSessionsResponse{Sessions: []acpsdk.SessionInfo{}}
	if p.Cursor != nil && *p.Cursor != "" {
		return out, nil // everything came in the first page
	}
	list, err := a.mgr.List(*p.Cwd, session.MaxListLimit)
	if err != nil {
		return acpsdk.ListSessionsResponse{}, mapErr(err)
	}
	for _, s := range list {
		info := acpsdk.SessionInfo{SessionId: acpsdk.SessionId(s.SessionID), Cwd: s.Cwd}
		if s.Title != "" {
			info.Title = acpsdk.Ptr(s.Title)
		}
		if s.UpdatedAt != "" {
			info.UpdatedAt = acpsdk.Ptr(s.UpdatedAt)
		}
		out.Sessions = append(out.Sessions, info)
	}
	return out, nil
}

// closeSession cancels the session's work, answers its prompts and ends it.
func (a *agent) closeSession(ctx context.Context, p acpsdk.CloseSessionRequest) (acpsdk.CloseSessionResponse, error) {
	st := a.session(string(p.SessionId))
	if st == nil {
		return acpsdk.CloseSessionResponse{}, notAttached(string(p.SessionId))
	}
	st.cancelPermissions()
	closeCtx, cancel := context.WithTimeout(ctx, a.opts.Grace)
	defer cancel()
	err := a.mgr.CloseSession(closeCtx, st.s.ID())
	a.mu.Lock()
	delete(a.sessions, st.s.ID())
	a.mu.Unlock()
	st.unsubscribe()
	// The running prompt was answered through its turn's end; queued ones
	// never ran.
	st.answerAll(result{stop: acpsdk.StopReasonCancelled})
	if err != nil {
		return acpsdk.CloseSessionResponse{}, mapErr(err)
	}
	return acpsdk.CloseSessionResponse{}, nil
}

// setSessionMode switches the approval policy for the next turn.
func (a *agent) setSessionMode(_ context.Context, p acpsdk.SetSessionModeRequest) (acpsdk.SetSessionModeResponse, error) {
	st := a.session(string(p.SessionId))
	if st == nil {
		return acpsdk.SetSessionModeResponse{}, notAttached(string(p.SessionId))
	}
	pol, ok := mapPolicy(string(p.ModeId))
	if !ok {
		return acpsdk.SetSessionModeResponse{}, &acpsdk.RequestError{Code: -32602, Message: fmt.Sprintf("unknown mode %q: use on-risk, never or auto", p.ModeId)}
	}
	st.s.SetPolicy(pol)
	return acpsdk.SetSessionModeResponse{}, nil
}

// setSessionConfigOption sets the mode or the model option.
func (a *agent) setSessionConfigOption(ctx context.Context, p acpsdk.SetSessionConfigOptionRequest) (acpsdk.SetSessionConfigOptionResponse, error) {
	if p.ValueId == nil {
		return acpsdk.SetSessionConfigOptionResponse{}, &acpsdk.RequestError{Code: -32602, Message: "SCV has no boolean options: its options, mode and model, take a value id"}
	}
	v := p.ValueId
	st := a.session(string(v.SessionId))
	if st == nil {
		return acpsdk.SetSessionConfigOptionResponse{}, notAttached(string(v.SessionId))
	}
	switch v.ConfigId {
	case modeConfigID:
		pol, ok := mapPolicy(string(v.Value))
		if !ok {
			return acpsdk.SetSessionConfigOptionResponse{}, &acpsdk.RequestError{Code: -32602, Message: fmt.Sprintf("unknown mode %q: use on-risk, never or auto", v.Value)}
		}
		st.s.SetPolicy(pol)
	case modelConfigID:
		models := a.models(ctx)
		if len(models) == 0 {
			return acpsdk.SetSessionConfigOptionResponse{}, &acpsdk.RequestError{Code: -32602,
				Message: fmt.Sprintf("SCV offers no model option: the provider lists no models, so the session keeps the configured model %s ([providers.NAME] model in config.toml)", st.s.Model())}
		}
		model := string(v.Value)
		if !slices.Contains(models, model) && model != st.s.Model() {
			return acpsdk.SetSessionConfigOptionResponse{}, &acpsdk.RequestError{Code: -32602,
				Message: fmt.Sprintf("unknown model %q: the provider lists %s; pick one of the model option's values", model, listModels(models))}
		}
		st.s.SetModel(model)
	default:
		return acpsdk.SetSessionConfigOptionResponse{}, &acpsdk.RequestError{Code: -32602, Message: fmt.Sprintf("unknown config option %q: SCV's options are %q and %q (the latter when the provider lists models)", v.ConfigId, modeConfigID, modelConfigID)}
	}
	return acpsdk.SetSessionConfigOptionResponse{ConfigOptions: a.sessionOptions(ctx, st)}, nil
}

// listModels names models for a message, the first few only.
func listModels(models []string) string {
	const shown = 10
	if len(models) <= shown {
		return strings.Join(models, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(models[:shown], ", "), len(models)-shown)
}

// prompt runs one turn, or queues it behind the running one, and answers
// when it ends. Its context is not the turn's: the SDK cancels it when the
// same session gets another prompt, which here waits its turn instead.
func (a *agent) prompt(_ context.Context, p acpsdk.PromptRequest) (acpsdk.PromptResponse, error) {
	st := a.session(string(p.SessionId))
	if st == nil {
		return acpsdk.PromptResponse{}, notAttached(string(p.SessionId))
	}
	text, err := promptText(p.Prompt)
	if err != nil {
		return acpsdk.PromptResponse{}, err
	}
	id := a.requestID()
	w := make(chan result, 1)
	st.mu.Lock()
	st.waiters[id] = w
	st.mu.Unlock()
	a.mu.Lock()
	client := a.clientName
	a.mu.Unlock()
	if client == "" {
		client = "acp"
	}
	if beforeStartTurn != nil {
		beforeStartTurn()
	}
	if err := st.s.StartTurn(a.ctx, id, text, client); err != nil {
		st.mu.Lock()
		delete(st.waiters, id)
		delete(st.early, id)
		st.mu.Unlock()
		return acpsdk.PromptResponse{}, mapErr(err)
	}
	// A session/cancel that came while the turn was being started.
	st.mu.Lock()
	early := st.early[id]
	delete(st.early, id)
	st.mu.Unlock()
	if early {
		a.spawn(func() { a.cancelOne(st, id, true) })
	}
	select {
	case r := <-w:
		if r.err != nil {
			return acpsdk.PromptResponse{}, r.err
		}
		return acpsdk.PromptResponse{StopReason: r.stop}, nil
	case <-a.ctx.Done():
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}, nil
	}
}

// cancel cancels the session's running turn and drops the prompts this
// connection queued; each answers with stopReason cancelled. It returns at
// once: the work runs on a helper goroutine, as a notification handler
// must not block.
func (a *agent) cancelNotification(_ context.Context, p acpsdk.CancelNotification) error {
	st := a.session(string(p.SessionId))
	if st == nil {
		return nil
	}
	st.cancelPermissions()
	a.spawn(func() { a.cancel(st) })
	return nil
}

func (a *agent) cancel(st *attached) {
	// Prompts that are queued or not started yet first, so the cancelled
	// turn's end starts none of them; then the running turn.
	st.mu.Lock()
	var ids []string
	for id := range st.waiters {
		if id != st.turnRequest {
			ids = append(ids, id)
		}
	}
	st.mu.Unlock()
	for _, id := range ids {
		a.cancelOne(st, id, true)
	}
	st.mu.Lock()
	turn := st.turn
	st.mu.Unlock()
	if turn != "" {
		if err := st.s.CancelTurn(turn); err != nil {
			a.log.Debug("No turn to cancel", "session", st.s.ID(), "err", err)
		}
	}
	if afterCancel != nil {
		afterCancel()
	}
}

// cancelOne cancels the prompt of request id: it removes it from the
// queue, or cancels its turn; a prompt that is neither yet (its
// session/prompt is between arriving and starting its turn, as the SDK
// runs requests and notifications on different goroutines) is marked, and
// the prompt cancels itself once it has started. retry allows one more
// attempt when a queued prompt started meanwhile.
func (a *agent) cancelOne(st *attached, id string, retry bool) {
	st.mu.Lock()
	queueID := ""
	for q, r := range st.queued {
		if r == id {
			queueID = q
			break
		}
	}
	turn := ""
	if st.turnRequest == id {
		turn = st.turn
	}
	if _, waiting := st.waiters[id]; waiting && queueID == "" && turn == "" {
		st.early[id] = true
	}
	st.mu.Unlock()
	switch {
	case queueID != "":
		for _, e := range st.s.Queue() {
			if e.QueueID != queueID {
				continue
			}
			if err := st.s.RemoveQueued(a.ctx, a.requestID(), e.QueueID, e.Revision); err != nil {
				a.log.Debug("A queued prompt could not be removed; it may have started", "session", st.s.ID(), "err", err)
				if retry {
					a.cancelOne(st, id, false)
				}
				return
			}
			st.answer(id, result{stop: acpsdk.StopReasonCancelled})
		}
	case turn != "":
		if err := st.s.CancelTurn(turn); err != nil {
			a.log.Debug("No turn to cancel", "session", st.s.ID(), "err", err)
		}
	}
}

// Test hooks: beforeStartTurn runs in session/prompt before the turn is
// started or queued, afterCancel at the end of a session/cancel's work.
var beforeStartTurn, afterCancel func()

// promptText turns a prompt's content blocks into the turn's text: text as
// it is, a resource link as a Markdown link the model can read with its
// tools, an embedded text resource as a fenced block after its URI.
func promptText(blocks []acpsdk.ContentBlock) (string, error) {
	var b strings.Builder
	sep := func() {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
	}
	for i, c := range blocks {
		switch {
		case c.Text != nil:
			sep()
			b.WriteString(c.Text.Text)
		case c.ResourceLink != nil:
			sep()
			fmt.Fprintf(&b, "[%s](%s)", c.ResourceLink.Name, c.ResourceLink.Uri)
		case c.Resource != nil && c.Resource.Resource.TextResourceContents != nil:
			r := c.Resource.Resource.TextResourceContents
			sep()
			fence := "```"
			for strings.Contains(r.Text, fence) {
				fence += "`"
			}
			fmt.Fprintf(&b, "%s\n%s\n%s\n%s", r.Uri, fence, r.Text, fence)
		case c.Resource != nil:
			return "", &acpsdk.RequestError{Code: -32602, Message: fmt.Sprintf("prompt block %d is a binary resource; SCV takes text resources only", i)}
		case c.Image != nil:
			return "", &acpsdk.RequestError{Code: -32602, Message: fmt.Sprintf("prompt block %d is an image; SCV's provider takes no images (promptCapabilities.image is false)", i)}
		case c.Audio != nil:
			return "", &acpsdk.RequestError{Code: -32602, Message: fmt.Sprintf("prompt block %d is audio; SCV takes no audio (promptCapabilities.audio is false)", i)}
		default:
			return "", &acpsdk.RequestError{Code: -32602, Message: fmt.Sprintf("prompt block %d has an unknown type", i)}
		}
	}
	return b.String(), nil
}

func notAttached(id string) error {
	return &acpsdk.RequestError{Code: codeResourceNotFound,
		Message: fmt.Sprintf("no session %q on this connection: start one with session/new, or open a stored one with session/load or session/resume", id)}
}

// mapErr maps the runtime's errors to JSON-RPC errors with their message.
func mapErr(err error) error {
	var se *session.Error
	if !errors.As(err, &se) {
		return &acpsdk.RequestError{Code: -32603, Message: err.Error()}
	}
	code := -32603
	switch se.Code {
	case protocol.ErrInvalidRequest, protocol.ErrQueueFull:
		code = -32602
	case protocol.ErrSessionNotFound:
		code = codeResourceNotFound
	}
	return &acpsdk.RequestError{Code: code, Message: se.Message, Data: map[string]any{"code": string(se.Code)}}
}
