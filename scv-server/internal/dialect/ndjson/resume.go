package ndjson

import (
	"errors"

	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/shared/textcut"
)

// ReplayFrameBytes bounds the items of one session.replay frame (as
// estimated before encoding), well under the server frame limit.
const ReplayFrameBytes = 1 << 20

// replayCut ends the text of a replay item cut to fit in a frame.
const replayCut = "\n[cut: this item is too large to replay]"

// sendReplay sends a resumed session's transcript after session.started:
// session.replay frames of at most ReplayFrameBytes of items each, oldest
// first, the last with done; an empty transcript is one empty frame.
func (c *conn) sendReplay(requestID string, s *session.Session) error {
	chunks := chunkReplay(s.TakeReplay(), ReplayFrameBytes)
	for i, items := range chunks {
		ev := &protocol.SessionReplay{RequestID: requestID, SessionID: s.ID(), Items: items, Done: i == len(chunks)-1}
		if err := c.sendReplayFrame(ev); err != nil {
			return err
		}
	}
	return nil
}

// sendReplayFrame sends ev, splitting it (or, for a single item, cutting
// the item's text) when it does not fit in a frame.
func (c *conn) sendReplayFrame(ev *protocol.SessionReplay) error {
	err := c.send(ev)
	var big *protocol.ErrFrameTooLarge
	if !errors.As(err, &big) {
		return err
	}
	if n := len(ev.Items); n > 1 {
		first, second := *ev, *ev
		first.Items, first.Done = ev.Items[:n/2], false
		second.Items = ev.Items[n/2:]
		if err := c.sendReplayFrame(&first); err != nil {
			return err
		}
		return c.sendReplayFrame(&second)
	}
	if len(ev.Items) == 1 && len(ev.Items[0].Text) > len(replayCut) {
		item := ev.Items[0]
		item.Text = textcut.Prefix(item.Text, len(item.Text)/2) + replayCut
		one := *ev
		one.Items = []protocol.ReplayItem{item}
		return c.sendReplayFrame(&one)
	}
	return err
}

// chunkReplay splits items into frames of about limit bytes; there is
// always at least one, possibly empty.
func chunkReplay(items []protocol.ReplayItem, limit int) [][]protocol.ReplayItem {
	if items == nil {
		items = []protocol.ReplayItem{}
	}
	var chunks [][]protocol.ReplayItem
	start, size := 0, 0
	for i, it := range items {
		n := len(it.Kind) + len(it.TurnID) + len(it.Text) + len(it.CallID) + len(it.Name) + len(it.Arguments) + 96
		if i > start && size+n > limit {
			chunks = append(chunks, items[start:i])
			start, size = i, 0
		}
		size += n
	}
	return append(chunks, items[start:])
}

// listSessions answers session.list.
func (c *conn) listSessions(m *protocol.SessionList) error {
	if c.version >= protocol.Version4 && m.Cwd == "" {
		live, err := c.mgr.Live("")
		if err != nil {
			return err
		}
		return c.send(&protocol.SessionListed{RequestID: m.RequestID, Sessions: []protocol.SessionSummary{}, Live: live})
	}
	sessions, err := c.mgr.List(m.Cwd, m.Limit)
	if err != nil {
		return err
	}
	ev := &protocol.SessionListed{RequestID: m.RequestID, Sessions: sessions}
	if c.version >= protocol.Version4 {
		if ev.Live, err = c.mgr.Live(m.Cwd); err != nil {
			return err
		}
		if ev.Live == nil {
			ev.Live = []protocol.LiveSession{}
		}
	}
	return c.send(ev)
}
