package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/core"
	"github.com/scv-cli/scv/scv-bridge/internal/scvconn"
	"github.com/scv-cli/scv/scv-bridge/internal/store"
	"github.com/scv-cli/scv/scv-bridge/internal/wechat"
	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/statefile"
)

// WeChatAccount is a configured (or only bound) WeChat account.
type WeChatAccount struct {
	Name   string
	Config config.WeChatAccount
}

// WeChatStatePath is the state file of one WeChat account, beside its
// store: state/bridge/wechat-<account>.json. `scv channels status` reads
// it (the store is locked while a bridge runs).
func WeChatStatePath(home, account string) string {
	return filepath.Join(paths.StateDir(home), "bridge", "wechat-"+account+".json")
}

// WeChatState is what the bridge keeps of a WeChat account between runs
// besides its store: the getupdates cursor, each peer's latest
// context_token, the send budget, the held rows per conversation (for
// status) and when WeChat ended the session. Written atomically, 0600;
// it holds no bot token.
type WeChatState struct {
	Cursor        string             `json:"cursor"`
	ContextTokens map[string]string  `json:"context_tokens,omitempty"`
	SendBudget    int                `json:"send_budget"`
	Budget        wechat.BudgetState `json:"budget"`
	Held          map[string]int     `json:"held,omitempty"`
	// SessionExpired is when WeChat answered errcode -14: credentials
	// bound before it no longer work.
	SessionExpired time.Time `json:"session_expired,omitzero"`
	Updated        time.Time `json:"updated"`
}

// ReadWeChatState reads the state file; a missing one is a zero state.
func ReadWeChatState(path string) (WeChatState, error) {
	data, err := statefile.ReadFile(filepath.Dir(path), filepath.Base(path), 16<<20, statefile.NoLinks)
	if errors.Is(err, fs.ErrNotExist) {
		return WeChatState{}, nil
	}
	if err != nil {
		return WeChatState{}, fmt.Errorf("read the WeChat state %s: %w", path, err)
	}
	var s WeChatState
	if err := json.Unmarshal(data, &s); err != nil {
		return WeChatState{}, fmt.Errorf("the WeChat state %s is damaged (%w); remove it to start from a fresh cursor", path, err)
	}
	return s, nil
}

// errOverBudget holds a row: the conversation's send budget is used up
// until the peer writes again.
var errOverBudget = errors.New("the WeChat send budget of this conversation is used up until the peer writes again")

// wechatRun is one served WeChat account.
type wechatRun struct {
	o     Options
	a     WeChatAccount
	log   *slog.Logger
	st    *store.Store
	fc    *wechat.Client
	c     *core.Core
	d     *store.Deliverer
	fatal func(error)

	mu    sync.Mutex // guards state and its file (held while saving)
	path  string
	state WeChatState
}

// RunWeChat serves one bound WeChat account until ctx ends or the account
// cannot go on (not bound, the session expired, scv-server gone, the lock
// held by another bridge).
func RunWeChat(ctx context.Context, o Options, a WeChatAccount) error {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	w := &wechatRun{o: o, a: a, log: o.Log.With("channel", "wechat", "account", a.Name), path: WeChatStatePath(o.Home, a.Name)}
	creds, err := wechat.ReadCredentials(a.Config.CredentialsFile(o.Home, a.Name))
	if err != nil {
		return fmt.Errorf("wechat account %s: %w (scv channels login wechat --account %s)", a.Name, err, a.Name)
	}
	if w.st, err = store.Open(StorePath(o.Home, "wechat", a.Name), store.Options{}); err != nil {
		return fmt.Errorf("wechat account %s: %w", a.Name, err)
	}
	defer w.st.Close()
	if w.state, err = ReadWeChatState(w.path); err != nil {
		return fmt.Errorf("wechat account %s: %w", a.Name, err)
	}
	if exp := w.state.SessionExpired; !exp.IsZero() && !creds.BoundAt.After(exp) {
		return fmt.Errorf("wechat account %s: WeChat ended its session at %s; bind it again: scv channels login wechat --account %s",
			a.Name, exp.Local().Format(time.RFC3339), a.Name)
	}
	budget := wechat.NewBudget(a.Config.SendBudget, time.Duration(a.Config.ThrottleMinutes)*time.Minute)
	budget.Restore(w.state.Budget)
	w.fc, err = wechat.New(wechat.Options{Token: creds.Token, BaseURL: creds.BaseURL, CDNURL: a.Config.CDNURL,
		HTTPClient: o.HTTPClient, Logger: w.log, Budget: budget})
	if err != nil {
		return fmt.Errorf("wechat account %s: %w", a.Name, err)
	}
	for peer, tok := range w.state.ContextTokens {
		w.fc.SetContextToken(peer, tok)
	}
	if err := w.save(nil); err != nil {
		return fmt.Errorf("wechat account %s: %w", a.Name, err)
	}
	conn, err := scvconn.Start(ctx, o.ServerPath, o.ServerEnv, nil)
	if err != nil {
		return fmt.Errorf("wechat account %s: %w", a.Name, err)
	}
	defer conn.Close()
	w.d = store.NewDeliverer(w.st, w.send)
	w.d.Log, w.d.Retryable, w.d.OnFinal = w.log, wechatRetryable, w.onFinal
	w.c = core.New(core.Config{Platform: "wechat", Account: a.Name, Owner: creds.OwnerID, Archive: o.Archive,
		Cwd: o.Cwd, Quiet: o.Quiet, Home: o.Home, Fetch: wechatFetch(w.fc), Log: w.log,
		MaxWaiting: o.MaxWaiting, MaxMediaBytes: o.MediaMaxBytes}, w.st, conn, w.d.Kick)
	return w.serve(ctx, conn)
}

// serve runs the deliverer, the long poll and the sweep until ctx ends
// or one of them fails; the first failure is the result.
func (w *wechatRun) serve(ctx context.Context, conn *scvconn.Conn) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := w.c.Start(ctx); err != nil {
		return err
	}
	errs := make(chan error, 4)
	w.fatal = func(err error) {
		select {
		case errs <- err:
		default:
		}
		cancel()
	}
	var wg sync.WaitGroup
	run := func(f func() error) {
		wg.Go(func() {
			if err := f(); err != nil && ctx.Err() == nil {
				w.fatal(err)
			}
		})
	}
	run(func() error { return w.d.Run(ctx) })
	run(func() error { return w.poll(ctx) })
	run(func() error { return sweep(ctx, w.o, w.st, w.log) })
	select {
	case <-ctx.Done():
	case <-conn.Done():
		w.fatal(conn.Err())
	}
	wg.Wait()
	w.c.Wait()
	close(errs)
	return errors.Join(drain(errs)...)
}

// poll long-polls from the stored cursor; a session WeChat ended marks
// the account unbound.
func (w *wechatRun) poll(ctx context.Context) error {
	w.mu.Lock()
	cursor := w.state.Cursor
	w.mu.Unlock()
	err := w.fc.PollCommitted(ctx, cursor, w.handle, w.committed)
	if errors.Is(err, wechat.ErrSessionExpired) {
		w.expired()
		return fmt.Errorf("wechat account %s: %w; bind it again: scv channels login wechat --account %s", w.a.Name, err, w.a.Name)
	}
	return err
}

// expired records that WeChat ended the session: the account is unbound
// until the next login.
func (w *wechatRun) expired() {
	w.mu.Lock()
	w.state.SessionExpired = time.Now().UTC()
	w.mu.Unlock()
	w.log.Error("WeChat ended the session (errcode -14); the account is unbound until it is bound again")
	_ = w.save(nil)
}

// save writes the state file: the cursor and tokens as handled, the
// budget and the held rows as they are now, plus extra (a row being held
// as it is saved). A failure is logged and returned (the poll handler must
// not let the cursor advance then).
func (w *wechatRun) save(extra map[string]int) error {
	// One lock over the count and the write: two saves never land in the
	// opposite order of their counts.
	w.mu.Lock()
	defer w.mu.Unlock()
	held := extra
	if held == nil {
		held = map[string]int{}
	}
	if rows, err := w.st.Rows(store.Held); err == nil {
		for _, r := range rows {
			held[r.Conversation]++
		}
	}
	w.state.Budget = w.fc.Budget().State()
	w.state.SendBudget = w.fc.Budget().Limit()
	w.state.Held = held
	w.state.Updated = time.Now().UTC()
	data, err := json.MarshalIndent(w.state, "", "  ")
	if err == nil {
		err = atomicfile.WriteFile(w.path, append(data, '\n'), 0o600)
	}
	if err != nil {
		w.log.Error("saving the WeChat state failed", "err", err)
		return fmt.Errorf("save the WeChat state: %w", err)
	}
	return nil
}
