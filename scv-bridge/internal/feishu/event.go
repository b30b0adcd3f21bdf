package feishu

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Event types the adapter decodes.
const (
	EventMessageReceive = "im.message.receive_v1"
	EventCardAction     = "card.action.trigger"
)

// Event is an inbound event: *MessageEvent, *CardAction or *OtherEvent.
type Event interface{ isEvent() }

// EventHeader is the schema 2.0 header every event carries.
type EventHeader struct {
	EventID    string `json:"event_id"`
	EventType  string `json:"event_type"`
	CreateTime string `json:"create_time"`
	AppID      string `json:"app_id"`
	TenantKey  string `json:"tenant_key"`
}

// MessageKind is a message's message_type.
type MessageKind string

// Message kinds. Others (sticker, interactive, share_chat, merge_forward,
// …) keep their platform name and get a placeholder Text.
const (
	KindText  MessageKind = "text"
	KindPost  MessageKind = "post"
	KindImage MessageKind = "image"
	KindFile  MessageKind = "file"
	KindAudio MessageKind = "audio"
	KindMedia MessageKind = "media"
)

// Chat types.
const (
	ChatP2P   = "p2p"
	ChatGroup = "group"
)

// Mention is one @mention in a message: Key is its placeholder in the
// text (such as "@_user_1").
type Mention struct {
	Key    string
	OpenID string
	Name   string
}

// Resource is media a message carries, to fetch with Client.Download.
type Resource struct {
	// Key is the image_key or file_key.
	Key string
	// Image tells which: an image (type=image) or a file (type=file).
	Image bool
	// Name is the file name, when the platform gives one.
	Name string
}

// MessageEvent is a message someone sent to the bot.
type MessageEvent struct {
	Header EventHeader
	// MessageID is the dedupe key of the message (om_…).
	MessageID string
	ChatID    string
	// ChatType is ChatP2P or ChatGroup.
	ChatType string
	// SenderOpenID is the sender's open_id (per app); SenderType is "user"
	// for people.
	SenderOpenID string
	SenderType   string
	Kind         MessageKind
	// Text is the message as text: the text of a text message, the
	// paragraphs of a post (title first), a placeholder for other kinds.
	// Mentions stay as their keys; see StripMentions.
	Text string
	// Resources are the images and files it carries, in order.
	Resources []Resource
	// DurationMS is the length of audio and video. Audio carries no
	// transcript.
	DurationMS int
	Mentions   []Mention
	// ParentID is the message this one replies to or quotes; RootID the
	// first message of its thread.
	ParentID   string
	RootID     string
	ThreadID   string
	CreateTime string
}

// CardAction is a click on a card button.
type CardAction struct {
	Header         EventHeader
	OperatorOpenID string
	// Value is the button's callback value.
	Value     map[string]any
	Tag       string
	MessageID string
	ChatID    string
}

// OtherEvent is an event the adapter does not decode.
type OtherEvent struct {
	Header EventHeader
	Raw    json.RawMessage
}

func (*MessageEvent) isEvent() {}
func (*CardAction) isEvent()   {}
func (*OtherEvent) isEvent()   {}

// ErrBadEvent is wrapped by DecodeEvent's errors.
var ErrBadEvent = errors.New("malformed event")

// DecodeEvent decodes a schema 2.0 event payload.
func DecodeEvent(payload []byte) (Event, error) {
	var env struct {
		Schema string          `json:"schema"`
		Header EventHeader     `json:"header"`
		Event  json.RawMessage `json:"event"`
	}
	if err := json.Unmarshal(payload, &env); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadEvent, err)
	}
	if env.Schema != "2.0" {
		return nil, fmt.Errorf("%w: schema %q, want 2.0 (subscribe with the new event version)", ErrBadEvent, env.Schema)
	}
	switch env.Header.EventType {
	case EventMessageReceive:
		return decodeMessage(env.Header, env.Event)
	case EventCardAction:
		return decodeCardAction(env.Header, env.Event)
	}
	return &OtherEvent{Header: env.Header, Raw: env.Event}, nil
}

type wireID struct {
	OpenID string `json:"open_id"`
}

func decodeMessage(h EventHeader, raw json.RawMessage) (*MessageEvent, error) {
	var ev struct {
		Sender struct {
			SenderID   wireID `json:"sender_id"`
			SenderType string `json:"sender_type"`
		} `json:"sender"`
		Message struct {
			MessageID   string `json:"message_id"`
			RootID      string `json:"root_id"`
			ParentID    string `json:"parent_id"`
			CreateTime  string `json:"create_time"`
			ChatID      string `json:"chat_id"`
			ThreadID    string `json:"thread_id"`
			ChatType    string `json:"chat_type"`
			MessageType string `json:"message_type"`
			Content     string `json:"content"`
			Mentions    []struct {
				Key  string `json:"key"`
				ID   wireID `json:"id"`
				Name string `json:"name"`
			} `json:"mentions"`
		} `json:"message"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("%w: message event: %w", ErrBadEvent, err)
	}
	m := ev.Message
	if m.MessageID == "" || m.ChatID == "" {
		return nil, fmt.Errorf("%w: a message event without message_id or chat_id", ErrBadEvent)
	}
	out := &MessageEvent{
		Header: h, MessageID: m.MessageID, ChatID: m.ChatID, ChatType: m.ChatType,
		SenderOpenID: ev.Sender.SenderID.OpenID, SenderType: ev.Sender.SenderType,
		Kind: MessageKind(m.MessageType), ParentID: m.ParentID, RootID: m.RootID,
		ThreadID: m.ThreadID, CreateTime: m.CreateTime,
	}
	for _, mm := range m.Mentions {
		out.Mentions = append(out.Mentions, Mention{Key: mm.Key, OpenID: mm.ID.OpenID, Name: mm.Name})
	}
	if err := out.decodeContent(m.Content); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeContent fills Text, Resources and DurationMS from the content
// JSON string of the message's kind.
func (e *MessageEvent) decodeContent(content string) error {
	var c struct {
		Text     string          `json:"text"`
		Title    string          `json:"title"`
		Content  [][]postElement `json:"content"`
		ImageKey string          `json:"image_key"`
		FileKey  string          `json:"file_key"`
		FileName string          `json:"file_name"`
		Duration int             `json:"duration"`
	}
	if content != "" {
		if err := json.Unmarshal([]byte(content), &c); err != nil {
			return fmt.Errorf("%w: %s content: %w", ErrBadEvent, e.Kind, err)
		}
	}
	switch e.Kind {
	case KindText:
		e.Text = c.Text
	case KindPost:
		e.Text, e.Resources = postText(c.Title, c.Content)
	case KindImage:
		e.Text = "[image]"
		e.Resources = []Resource{{Key: c.ImageKey, Image: true}}
	case KindFile:
		e.Text = "[file " + c.FileName + "]"
		e.Resources = []Resource{{Key: c.FileKey, Name: c.FileName}}
	case KindAudio:
		e.Text = "[voice message, no transcript]"
		e.Resources = []Resource{{Key: c.FileKey}}
		e.DurationMS = c.Duration
	case KindMedia:
		e.Text = "[video " + c.FileName + "]"
		e.Resources = []Resource{{Key: c.FileKey, Name: c.FileName}}
		e.DurationMS = c.Duration
	default:
		e.Text = "[" + string(e.Kind) + " message, not shown]"
	}
	return nil
}

type postElement struct {
	Tag      string `json:"tag"`
	Text     string `json:"text"`
	Href     string `json:"href"`
	UserID   string `json:"user_id"`
	ImageKey string `json:"image_key"`
	FileKey  string `json:"file_key"`
	Language string `json:"language"`
}

// postText renders a received post as text: the title, then one line per
// paragraph; links as [text](href), code blocks fenced.
func postText(title string, paras [][]postElement) (string, []Resource) {
	var b strings.Builder
	var res []Resource
	if title != "" {
		b.WriteString(title + "\n")
	}
	for i, p := range paras {
		if i > 0 {
			b.WriteByte('\n')
		}
		for _, el := range p {
			switch el.Tag {
			case "text", "md":
				b.WriteString(el.Text)
			case "a":
				fmt.Fprintf(&b, "[%s](%s)", el.Text, el.Href)
			case "at":
				b.WriteString(el.UserID)
			case "code_block":
				fmt.Fprintf(&b, "```%s\n%s\n```", strings.ToLower(el.Language), el.Text)
			case "img":
				b.WriteString("[image]")
				res = append(res, Resource{Key: el.ImageKey, Image: true})
			case "media":
				b.WriteString("[video]")
				res = append(res, Resource{Key: el.FileKey})
			case "emotion":
			default:
				b.WriteString(el.Text)
			}
		}
	}
	return b.String(), res
}

var mentionKey = regexp.MustCompile(`@_user_\d+|@_all`)

// StripMentions removes the mention placeholders (@_user_N, @_all) from
// text and trims the spaces left, so "@_user_1 /status" is "/status".
func StripMentions(text string) string {
	return strings.Join(strings.Fields(mentionKey.ReplaceAllString(text, " ")), " ")
}

// MentionsOpenID reports whether the message mentions openID (the bot, in
// a group).
func (e *MessageEvent) MentionsOpenID(openID string) bool {
	for _, m := range e.Mentions {
		if m.OpenID == openID {
			return true
		}
	}
	return false
}

func decodeCardAction(h EventHeader, raw json.RawMessage) (*CardAction, error) {
	var ev struct {
		Operator wireID `json:"operator"`
		Action   struct {
			Value json.RawMessage `json:"value"`
			Tag   string          `json:"tag"`
		} `json:"action"`
		Context struct {
			MessageID string `json:"open_message_id"`
			ChatID    string `json:"open_chat_id"`
		} `json:"context"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("%w: card action: %w", ErrBadEvent, err)
	}
	a := &CardAction{Header: h, OperatorOpenID: ev.Operator.OpenID, Tag: ev.Action.Tag,
		MessageID: ev.Context.MessageID, ChatID: ev.Context.ChatID}
	if len(ev.Action.Value) > 0 && string(ev.Action.Value) != "null" {
		if err := json.Unmarshal(ev.Action.Value, &a.Value); err != nil {
			return nil, fmt.Errorf("%w: card action value is not an object: %w", ErrBadEvent, err)
		}
	}
	return a, nil
}

// ErrNotOwner is returned by Approval for a click by anyone but the owner.
var ErrNotOwner = errors.New("only the owner may answer an approval")

// Approval reads a click on an ApprovalCard button: the request id and
// whether it was allowed. A click by anyone but ownerOpenID (or with no
// owner configured) is refused with ErrNotOwner; a click on another card
// is an error wrapping ErrBadEvent.
func (a *CardAction) Approval(ownerOpenID string) (requestID string, allow bool, err error) {
	req, _ := a.Value["req"].(string)
	d, _ := a.Value["d"].(string)
	if req == "" || (d != DecisionAllow && d != DecisionDeny) {
		return "", false, fmt.Errorf("%w: the click is not on an approval button", ErrBadEvent)
	}
	if ownerOpenID == "" || a.OperatorOpenID != ownerOpenID {
		return "", false, ErrNotOwner
	}
	return req, d == DecisionAllow, nil
}

// CallbackResponse is what a card callback may answer: a toast, and
// optionally a card that replaces the clicked one.
type CallbackResponse struct {
	Toast *Toast          `json:"toast,omitempty"`
	Card  json.RawMessage `json:"card,omitempty"`
}

// Toast is a short notice shown to the person who clicked.
type Toast struct {
	// Type is info, success, warning or error.
	Type    string `json:"type"`
	Content string `json:"content"`
}
