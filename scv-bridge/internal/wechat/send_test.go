package wechat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestSendTextSplitsAndIsIdempotent(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	var cur string
	inbound(t, fs, c, &cur, "m1", peer, "hi")
	para := strings.Repeat("词语 ", 667) // 2,001 characters: two do not fit one piece
	long := strings.Join([]string{para, para, para}, "\n\n")
	o := Outgoing{Peer: peer, ClientID: "20260926T060405-3fa9c2d17e5b", Class: ClassFinal, Markdown: "# Result\n\n" + long}
	res, err := c.SendText(context.Background(), o)
	if err != nil || res.Sent != 3 || res.Held != "" {
		t.Fatalf("SendText: %+v, %v", res, err)
	}
	sent := fs.Sent()
	wantIDs := []string{o.ClientID, o.ClientID + "-2", o.ClientID + "-3"}
	var joined []string
	for i, s := range sent {
		var it struct {
			Text struct{ Text string } `json:"text_item"`
		}
		_ = json.Unmarshal(s.Items[0], &it)
		if s.ClientID != wantIDs[i] || s.ContextToken != "ctx-m1" || utf8.RuneCountInString(it.Text.Text) > ChunkRunes {
			t.Errorf("piece %d: id %s token %s, %d characters", i, s.ClientID, s.ContextToken, utf8.RuneCountInString(it.Text.Text))
		}
		if strings.HasPrefix(it.Text.Text, " ") || strings.HasSuffix(it.Text.Text, "\n") {
			t.Errorf("piece %d not cut at a paragraph", i)
		}
		joined = append(joined, it.Text.Text)
	}
	if len(sent) != 3 || !strings.HasPrefix(joined[0], "Result\n\n") {
		t.Fatalf("%d pieces, first begins %q", len(sent), joined[0][:10])
	}
	// A restart between storing the reply and recording its delivery
	// sends it again with the same ids: the user sees it once.
	if _, err := c.SendText(context.Background(), o); err != nil || len(fs.Sent()) != 3 {
		t.Fatalf("resend: %v, %d messages", err, len(fs.Sent()))
	}
}

func TestSendNeedsAContextToken(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	_, err := c.SendText(context.Background(), Outgoing{Peer: "stranger@im.wechat", ClientID: "x", Class: ClassFinal, Markdown: "hi"})
	if err == nil || !strings.Contains(err.Error(), "context token") || fs.SendCalls() != 0 {
		t.Fatalf("%v, %d calls", err, fs.SendCalls())
	}
}

func TestThrottledAccountMakesNoCalls(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	fs.SetBudget(3) // the platform is stricter than our budget of 8
	var cur string
	inbound(t, fs, c, &cur, "m1", peer, "go")
	ctx := context.Background()
	for i := range 3 {
		if _, err := c.SendText(ctx, Outgoing{Peer: peer, ClientID: "id" + string(rune('a'+i)), Class: ClassFinal, Markdown: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	res, err := c.SendText(ctx, Outgoing{Peer: peer, ClientID: "idd", Class: ClassFinal, Markdown: "fourth"})
	if !errors.Is(err, ErrThrottled) || res.Held != "fourth" {
		t.Fatalf("the 4th send: %+v, %v", res, err)
	}
	if until := c.Budget().ThrottledUntil(); until.Sub(start) < MinThrottle {
		t.Errorf("backoff until %v, less than an hour", until)
	}
	calls := fs.SendCalls()
	// Not even a new message from the peer lifts the penalty early.
	inbound(t, fs, c, &cur, "m2", peer, "again")
	if _, err := c.SendText(ctx, Outgoing{Peer: peer, ClientID: "ide", Class: ClassFinal, Markdown: "fifth"}); !errors.Is(err, ErrThrottled) {
		t.Fatalf("a send while throttled: %v", err)
	}
	if err := c.SendMedia(ctx, OutMedia{Peer: peer, ClientID: "idf", Class: ClassFinal, Kind: KindFile, Name: "a.txt", Data: []byte("x")}); !errors.Is(err, ErrThrottled) {
		t.Fatalf("media while throttled: %v", err)
	}
	if fs.SendCalls() != calls || fs.CallsWhileThrottled() != 0 {
		t.Errorf("calls while throttled: %d more, fake counted %d", fs.SendCalls()-calls, fs.CallsWhileThrottled())
	}
}

func TestHeldReportsFlushOnNextInbound(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	var cur string
	inbound(t, fs, c, &cur, "m1", peer, "start the jobs")
	ctx := context.Background()
	var held []string
	for i := range 8 {
		res, err := c.SendText(ctx, Outgoing{Peer: peer, ClientID: "r" + string(rune('a'+i)), Class: ClassReport, Markdown: "job " + string(rune('A'+i)) + " done"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Held != "" {
			held = append(held, res.Held)
		}
	}
	if len(fs.Sent()) != 6 || len(held) != 2 {
		t.Fatalf("%d reports sent, %d held; want 6 and 2 (one send kept for the notice, one for the final answer)", len(fs.Sent()), len(held))
	}
	notice := Outgoing{Peer: peer, ClientID: "n1", Class: ClassNotice, Markdown: HeldNotice(len(held))}
	if res, err := c.SendText(ctx, notice); err != nil || res.Sent != 1 {
		t.Fatalf("notice: %+v, %v", res, err)
	}
	notice.ClientID = "n2"
	if res, _ := c.SendText(ctx, notice); res.Sent != 0 {
		t.Error("a second notice was sent before the owner wrote")
	}
	if res, err := c.SendText(ctx, Outgoing{Peer: peer, ClientID: "f1", Class: ClassFinal, Markdown: "final"}); err != nil || res.Sent != 1 {
		t.Fatalf("the final answer must still fit: %+v, %v", res, err)
	}
	if res, _ := c.SendText(ctx, Outgoing{Peer: peer, ClientID: "f2", Class: ClassFinal, Markdown: "more"}); res.Sent != 0 || res.Held != "more" {
		t.Errorf("a 9th send: %+v", res)
	}
	inbound(t, fs, c, &cur, "m2", peer, "ok")
	res, err := c.SendText(ctx, Outgoing{Peer: peer, ClientID: "flush", Class: ClassReport, Markdown: MergeHeld(held)})
	if err != nil || res.Sent != 1 {
		t.Fatalf("flush: %+v, %v", res, err)
	}
	last := fs.Sent()[len(fs.Sent())-1]
	if !bytes.Contains(last.Items[0], []byte("job G done")) || !bytes.Contains(last.Items[0], []byte("job H done")) || last.ContextToken != "ctx-m2" {
		t.Errorf("the flush %s with token %s", last.Items[0], last.ContextToken)
	}
}
