// Package bridge serves configured chat accounts: for each, the store
// (whose lock makes the bridge the account's only one), an scv-server
// connection, the core, the outbox deliverer and the platform adapter.
package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/core"
	"github.com/scv-cli/scv/scv-bridge/internal/feishu"
	"github.com/scv-cli/scv/scv-bridge/internal/scvconn"
	"github.com/scv-cli/scv/scv-bridge/internal/store"
	"github.com/scv-cli/scv/shared/chatlog"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
)

// Options are what every account shares.
type Options struct {
	// Home is SCV_HOME; the store is state/bridge/<channel>-<account>.db.
	Home string
	// Archive is channels.archive; KeepDays channels.keep_days.
	Archive  string
	KeepDays int
	// Cwd is the sessions' working directory.
	Cwd string
	// ServerPath is scv-server; ServerEnv its environment (nil: ours).
	ServerPath string
	ServerEnv  []string
	// HTTPClient talks to the platform (nil: http.DefaultClient).
	HTTPClient *http.Client
	// MaxWaiting and MediaMaxBytes are the core's per-conversation
	// bounds (channels.max_waiting, channels.media_max_mb; 0: its
	// defaults).
	MaxWaiting    int
	MediaMaxBytes int64
	// Quiet is the core's quiet window (0: its default).
	Quiet time.Duration
	// Now is the clock of the media sweep (nil: time.Now); tests inject
	// one to see keep_days pass.
	Now func() time.Time
	// NoStreaming sends answers when done instead of in a streaming card.
	NoStreaming bool
	Log         *slog.Logger
}

// StorePath is the database (and lock) of one (channel, account).
func StorePath(home, channel, account string) string {
	return filepath.Join(paths.StateDir(home), "bridge", channel+"-"+account+".db")
}

// FeishuAccount is a configured Feishu account with its secret resolved.
type FeishuAccount struct {
	Name   string
	Config config.FeishuAccount
	Secret string
}

// RunFeishu serves one Feishu account until ctx ends or the account
// cannot go on (bad credentials, scv-server gone, the lock held).
func RunFeishu(ctx context.Context, o Options, a FeishuAccount) error {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	log := o.Log.With("channel", "feishu", "account", a.Name)
	st, err := store.Open(StorePath(o.Home, "feishu", a.Name), store.Options{})
	if err != nil {
		return fmt.Errorf("feishu account %s: %w", a.Name, err)
	}
	defer st.Close()
	fc, err := feishu.New(feishu.Options{AppID: a.Config.AppID, AppSecret: a.Secret, BaseURL: a.Config.BaseURL,
		HTTPClient: o.HTTPClient, Logger: log})
	if err != nil {
		return fmt.Errorf("feishu account %s: %w", a.Name, err)
	}
	bot, err := fc.Bot(ctx)
	if err != nil {
		return fmt.Errorf("feishu account %s: the bot's identity: %w", a.Name, err)
	}
	conn, err := scvconn.Start(ctx, o.ServerPath, o.ServerEnv, nil)
	if err != nil {
		return fmt.Errorf("feishu account %s: %w", a.Name, err)
	}
	defer conn.Close()
	streams := newFeishuStreams(fc, log)
	d := store.NewDeliverer(st, feishuSender(fc, streams, o.Home))
	d.Retryable, d.Log, d.OnFinal = retryable, log, streams.onFinal(o.Home)
	cfg := core.Config{Platform: "feishu", Account: a.Name, Owner: a.Config.OwnerOpenID, Archive: o.Archive,
		Cwd: o.Cwd, Quiet: o.Quiet, Home: o.Home, Fetch: feishuFetch(fc), Quote: fc.MessageText, Streamer: streams, Log: log,
		MaxWaiting: o.MaxWaiting, MaxMediaBytes: o.MediaMaxBytes}
	if o.NoStreaming {
		cfg.Streamer = nil
	}
	c := core.New(cfg, st, conn, d.Kick)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	run := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil && ctx.Err() == nil {
				errs <- err
				cancel()
			}
		}()
	}
	run(func() error { return d.Run(ctx) })
	run(func() error { return fc.Listen(ctx, feishu.ListenOptions{Handler: feishuHandler(c, bot.OpenID, log)}) })
	run(func() error { return sweep(ctx, o, st, log) })
	select {
	case <-ctx.Done():
	case <-conn.Done():
		errs <- conn.Err()
		cancel()
	}
	wg.Wait()
	c.Wait()
	close(errs)
	return errors.Join(drain(errs)...)
}

func drain(ch <-chan error) []error {
	var out []error
	for err := range ch {
		out = append(out, err)
	}
	return out
}

// feishuHandler stores a message through the core before the adapter
// acknowledges it; an error leaves it unacknowledged (redelivered). A
// group message is for SCV only when it mentions the bot (an app with
// the scope to read every group message would otherwise answer them all).
func feishuHandler(c *core.Core, botOpenID string, log *slog.Logger) feishu.Handler {
	return func(_ context.Context, ev feishu.Event) (*feishu.CallbackResponse, error) {
		m, ok := ev.(*feishu.MessageEvent)
		if !ok || m.SenderType != "user" {
			return nil, nil
		}
		if m.ChatType != feishu.ChatP2P && !m.MentionsOpenID(botOpenID) {
			return nil, nil
		}
		msg := core.Message{ID: m.MessageID, Conversation: m.ChatID, Sender: m.SenderOpenID,
			Direct: m.ChatType == feishu.ChatP2P, Text: feishu.StripMentions(m.Text), Time: time.Now(),
			Resources: feishuResources(m), QuoteOf: m.ParentID}
		if err := c.Accept(msg); err != nil {
			log.Warn("a message was not accepted; the platform will deliver it again", "message", m.MessageID, "err", err)
			return nil, err
		}
		return nil, nil
	}
}

// sweep prunes the store and the chat media at start and then daily.
func sweep(ctx context.Context, o Options, st *store.Store, log *slog.Logger) error {
	keep := time.Duration(max(o.KeepDays, 7)) * 24 * time.Hour
	for {
		if _, err := st.PruneInbound(keep); err != nil {
			log.Error("pruning the inbound store failed", "err", err)
		}
		if _, err := st.PruneOutbox(keep); err != nil {
			log.Error("pruning the outbox failed", "err", err)
		}
		now := time.Now()
		if o.Now != nil {
			now = o.Now()
		}
		if o.KeepDays > 0 {
			if _, err := chatlog.SweepMedia(o.Home, o.KeepDays, now); err != nil {
				log.Error("sweeping old chat media failed", "err", err)
			}
		}
		core.SweepOutboxOrphans(o.Home, now)
		t := time.NewTimer(24 * time.Hour)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}
