package server

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/instructions"
	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/scv-server/internal/tools/chat"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
)

// chatExtend returns the ExtendFunc of the chat tools: a tool-enabled
// session whose client named a channel gets chat_attach and the system
// prompt's Chat channel section; one that named its chat log
// (channel.log) also gets chat_history and chat_keep, on the log the
// server finds in channels.archive.
func chatExtend(home string, cfg *config.Config, opts Options) session.ExtendFunc {
	if home == "" {
		return nil // no instance directory: no media, no outbox
	}
	env := opts.Env
	if env == nil {
		env = paths.OSEnv()
	}
	userHome := strings.TrimSpace(env.Getenv("HOME"))
	if userHome != "" && !filepath.IsAbs(userHome) {
		userHome = ""
	}
	archive := cfg.Channels.ArchiveDir(home)
	return func(info session.SessionInfo) (session.Extension, error) {
		if info.Channel == nil {
			return session.Extension{}, nil
		}
		set, err := chat.New(chat.Options{Home: home, UserHome: userHome, Archive: archive, Channel: *info.Channel, SessionID: info.ID})
		if err != nil {
			return session.Extension{}, err
		}
		return session.Extension{Tools: set.Tools(),
			System: instructions.ExtraSection(instructions.Section{Title: chat.SectionTitle, Body: set.SystemSection()})}, nil
	}
}

// combineExtend runs every non-nil ExtendFunc in order and joins what
// they add; nil when there is none.
func combineExtend(fns ...session.ExtendFunc) session.ExtendFunc {
	var live []session.ExtendFunc
	for _, f := range fns {
		if f != nil {
			live = append(live, f)
		}
	}
	switch len(live) {
	case 0:
		return nil
	case 1:
		return live[0]
	}
	return func(info session.SessionInfo) (session.Extension, error) {
		var all session.Extension
		var closers []func(context.Context)
		var busy []func() bool
		for _, f := range live {
			ext, err := f(info)
			if err != nil {
				for _, c := range closers {
					c(context.Background())
				}
				return session.Extension{}, err
			}
			all.Tools = append(all.Tools, ext.Tools...)
			if ext.System != "" {
				if all.System != "" {
					all.System += "\n\n"
				}
				all.System += ext.System
			}
			if ext.Close != nil {
				closers = append(closers, ext.Close)
			}
			if ext.Busy != nil {
				busy = append(busy, ext.Busy)
			}
		}
		if len(closers) > 0 {
			all.Close = func(ctx context.Context) {
				for _, c := range closers {
					c(ctx)
				}
			}
		}
		if len(busy) > 0 {
			all.Busy = func() bool {
				for _, b := range busy {
					if b() {
						return true
					}
				}
				return false
			}
		}
		return all, nil
	}
}
