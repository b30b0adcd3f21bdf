package feishu

import (
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/scv-cli/scv/scv-bridge/internal/feishu/feishutest"
)

func TestDecodePostFixture(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/post_event.json")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := DecodeEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	m := ev.(*MessageEvent)
	want := "Plan\n@_user_1 look at [this](https://example.com)\n[image]\n```go\nx := 1\n```"
	if m.Text != want {
		t.Fatalf("text = %q, want %q", m.Text, want)
	}
	if m.Kind != KindPost || m.ChatType != ChatGroup || m.ParentID != "om_parent" || m.RootID != "om_root" ||
		m.SenderOpenID != "ou_84aad35d084aa403a838cf73ee18467" || m.Header.EventID != "5e3702a84e847582be8db7fb73283c02" {
		t.Fatalf("event = %+v", m)
	}
	if !reflect.DeepEqual(m.Resources, []Resource{{Key: "img_v3_abc", Image: true}}) || !m.MentionsOpenID("ou_bot") || m.MentionsOpenID("ou_x") {
		t.Fatalf("resources %+v, mentions %+v", m.Resources, m.Mentions)
	}
	if got := StripMentions(m.Text); got[:19] != "Plan look at [this]" {
		t.Fatalf("stripped = %q", got)
	}
}

func TestDecodeMessageKinds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		typ     string
		content any
		text    string
		res     []Resource
		dur     int
	}{
		{"text", map[string]string{"text": "@_user_1  /status "}, "@_user_1  /status ", nil, 0},
		{"image", map[string]string{"image_key": "img_1"}, "[image]", []Resource{{Key: "img_1", Image: true}}, 0},
		{"file", map[string]string{"file_key": "file_1", "file_name": "a.pdf"}, "[file a.pdf]", []Resource{{Key: "file_1", Name: "a.pdf"}}, 0},
		{"audio", map[string]any{"file_key": "file_2", "duration": 2000}, "[voice message, no transcript]", []Resource{{Key: "file_2"}}, 2000},
		{"media", map[string]any{"file_key": "file_3", "image_key": "img_c", "file_name": "v.mp4", "duration": 9000}, "[video v.mp4]", []Resource{{Key: "file_3", Name: "v.mp4"}}, 9000},
		{"sticker", map[string]string{"file_key": "s"}, "[sticker message, not shown]", nil, 0},
	} {
		ev, err := DecodeEvent(feishutest.MessageEvent("om_1", "oc_1", ChatP2P, "ou_1", c.typ, c.content))
		if err != nil {
			t.Fatalf("%s: %v", c.typ, err)
		}
		m := ev.(*MessageEvent)
		if m.Text != c.text || !reflect.DeepEqual(m.Resources, c.res) || m.DurationMS != c.dur || m.Kind != MessageKind(c.typ) {
			t.Errorf("%s: %+v", c.typ, m)
		}
	}
}

func TestStripMentions(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"@_user_1 /status":          "/status",
		"  @_user_12   /new  ":      "/new",
		"hi @_all there":            "hi there",
		"mail me@_user_x.example":   "mail me@_user_x.example",
		"@_user_1@_user_2 /help me": "/help me",
	} {
		if got := StripMentions(in); got != want {
			t.Errorf("StripMentions(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDecodeEventErrors(t *testing.T) {
	t.Parallel()
	for name, b := range map[string]string{
		"not json":   `{`,
		"schema 1":   `{"uuid":"x","event":{"type":"message"}}`,
		"no ids":     `{"schema":"2.0","header":{"event_type":"im.message.receive_v1"},"event":{"message":{}}}`,
		"bad body":   `{"schema":"2.0","header":{"event_type":"im.message.receive_v1"},"event":{"message":{"message_id":"om","chat_id":"oc","message_type":"text","content":"{"}}}`,
		"bad value":  `{"schema":"2.0","header":{"event_type":"card.action.trigger"},"event":{"action":{"value":"str"}}}`,
		"wrong type": `{"schema":"2.0","header":{"event_type":"im.message.receive_v1"},"event":{"message":{"message_id":5}}}`,
	} {
		if _, err := DecodeEvent([]byte(b)); !errors.Is(err, ErrBadEvent) {
			t.Errorf("%s: err = %v, want ErrBadEvent", name, err)
		}
	}
	ev, err := DecodeEvent([]byte(`{"schema":"2.0","header":{"event_type":"im.chat.member.bot.added_v1"},"event":{"chat_id":"oc"}}`))
	if o, ok := ev.(*OtherEvent); err != nil || !ok || o.Header.EventType != "im.chat.member.bot.added_v1" {
		t.Fatalf("other event: %+v, %v", ev, err)
	}
}

func TestApprovalChecksTheOwner(t *testing.T) {
	t.Parallel()
	decode := func(who string, v map[string]string) *CardAction {
		ev, err := DecodeEvent(feishutest.CardActionEvent(who, v, "om_c", "oc_1"))
		if err != nil {
			t.Fatal(err)
		}
		return ev.(*CardAction)
	}
	a := decode("ou_owner", map[string]string{"req": "r7", "d": "deny"})
	if req, allow, err := a.Approval("ou_owner"); err != nil || req != "r7" || allow || a.MessageID != "om_c" || a.ChatID != "oc_1" {
		t.Fatalf("owner deny: %q %v %v %+v", req, allow, err, a)
	}
	if _, _, err := decode("ou_else", map[string]string{"req": "r7", "d": "allow"}).Approval("ou_owner"); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("stranger: %v", err)
	}
	if _, _, err := a.Approval(""); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("no owner configured: %v", err)
	}
	if _, _, err := decode("ou_owner", map[string]string{"x": "y"}).Approval("ou_owner"); !errors.Is(err, ErrBadEvent) {
		t.Fatalf("other button: %v", err)
	}
}

func FuzzDecodeEvent(f *testing.F) {
	b, _ := os.ReadFile("testdata/post_event.json")
	f.Add(b)
	f.Add(feishutest.MessageEvent("om", "oc", "p2p", "ou", "text", map[string]string{"text": "@_user_1 x"}))
	f.Add(feishutest.CardActionEvent("ou", map[string]string{"req": "r", "d": "allow"}, "om", "oc"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := DecodeEvent(b)
		if err == nil && ev == nil {
			t.Fatal("nil event without an error")
		}
		if m, ok := ev.(*MessageEvent); ok {
			_ = StripMentions(m.Text)
		}
	})
}
