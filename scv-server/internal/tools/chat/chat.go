// Package chat holds the chat tools of a session that serves a chat
// conversation (session.start channel; docs/channels.md): chat_attach,
// offered whenever the client named a channel, and chat_history and
// chat_keep, offered only when it named the conversation's chat log (an
// account owner's direct chat, channel.log).
//
// The server never lets a client name a directory: the log is
// <archive>/<platform>/<account>/<conversation> (chatlog.Dir) and the
// chat media <SCV_HOME>/state/media/<platform>/<account>/<conversation>,
// both from checked plain names.
package chat

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/chatlog"
	"github.com/scv-cli/scv/shared/protocol"
)

// Tool names.
const (
	AttachName  = "chat_attach"
	HistoryName = "chat_history"
	KeepName    = "chat_keep"
)

// MediaRoot returns $SCV_HOME/state/media (chatlog.MediaRoot).
func MediaRoot(home string) string { return chatlog.MediaRoot(home) }

// OutboxDir returns the channels' media outbox (chatlog.OutboxDir).
func OutboxDir(home string) string { return chatlog.OutboxDir(home) }

// Options configure the chat tools of one session.
type Options struct {
	// Home is SCV_HOME, absolute.
	Home string
	// UserHome is the user's home directory, whose credential locations
	// chat_attach refuses; empty for none known.
	UserHome string
	// Archive is the chat archive (channels.archive), absolute.
	Archive string
	// Channel is the session's channel, checked by the protocol layer.
	Channel protocol.Channel
	// SessionID names the session in outbox records.
	SessionID string
	// Location is the zone chat_history shows times in; nil is time.Local.
	Location *time.Location
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Set is the chat tools of one session.
type Set struct {
	opts   Options
	logDir string // "" without a chat log
	media  string // this conversation's media directory; "" without a log
	attach *Attach
}

// New returns the chat tools of a session serving opts.Channel.
func New(opts Options) (*Set, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Location == nil {
		opts.Location = time.Local
	}
	s := &Set{opts: opts}
	if opts.Channel.Log {
		dir, err := chatlog.Dir(opts.Archive, opts.Channel.Platform, opts.Channel.Account, opts.Channel.Conversation)
		if err != nil {
			return nil, fmt.Errorf("the chat log of this channel: %w", err)
		}
		s.logDir = dir
		if s.media, err = chatlog.MediaDir(opts.Home, opts.Channel.Platform, opts.Channel.Account, opts.Channel.Conversation); err != nil {
			return nil, fmt.Errorf("the chat media of this channel: %w", err)
		}
	}
	s.attach = &Attach{set: s}
	return s, nil
}

// Tools returns chat_attach, and with a chat log chat_history and
// chat_keep.
func (s *Set) Tools() []tools.Tool {
	out := []tools.Tool{s.attach}
	if s.logDir != "" {
		out = append(out, &History{set: s}, &Keep{set: s})
	}
	return out
}

// SectionTitle is the title of the system prompt's chat section.
const SectionTitle = "Chat channel"

// SystemSection is the body of the system prompt's *Chat channel* section.
func (s *Set) SystemSection() string {
	var b strings.Builder
	fmt.Fprintf(&b, "This session answers a chat on %s. Your replies reach the user as chat messages, so keep them short and plain: a phone screen, little markdown, no wide tables. The user cannot see this machine's screen or files; when they need a file you made or found, send it with chat_attach (at most %d files a reply, each a regular file up to 25 MiB) rather than pasting its content or path.\n",
		platformName(s.opts.Channel.Platform), MaxFilesPerReply)
	b.WriteString("Files the user sends arrive as local paths in their message. ")
	if s.logDir != "" {
		fmt.Fprintf(&b, "Those files are removed after a retention period unless kept: when the user wants one kept, or it is plainly worth keeping, call chat_keep with its path. This is the owner's direct chat, and its earlier messages are in the chat log: when the user refers to something said or sent before this session (\"the photo from last week\", \"what did I say about…\"), look it up with chat_history (search, episodes, read) instead of guessing.\n")
	} else {
		b.WriteString("They are removed after a retention period.\n")
	}
	b.WriteString("When a turn begins with [SCV background report], your answer reaches the user as an unprompted message, possibly long after they asked, so make it stand on its own: say which request it answers.")
	return b.String()
}

func platformName(p string) string {
	switch p {
	case "feishu":
		return "Feishu"
	case "lark":
		return "Lark"
	case "wechat":
		return "WeChat"
	}
	return p
}

// resolvedDir returns dir with its symbolic links resolved, or dir itself
// when it does not exist yet.
func resolvedDir(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return filepath.Clean(dir)
}

// within reports whether p is dir or inside it (both clean, absolute).
func within(p, dir string) bool {
	if dir == "" {
		return false
	}
	if p == dir {
		return true
	}
	return strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}
