package feishu

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStreamCard(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, func(o *Options) { o.MinStreamInterval = 150 * time.Millisecond })
	ctx := t.Context()
	s, err := c.StartStream(ctx, Destination{To: Recipient{ByChatID, "oc_1"}, ReplyTo: "om_in"}, "row-1")
	if err != nil || s.Fallback() {
		t.Fatalf("start: %v, fallback %v", err, s.Fallback())
	}
	msgs := fs.Messages()
	if len(msgs) != 1 || msgs[0].MsgType != "interactive" || msgs[0].ReplyTo != "om_in" || !strings.Contains(msgs[0].Content, s.CardID()) {
		t.Fatalf("card message: %+v", msgs)
	}
	if card := fs.Card(s.CardID()); !card.Streaming {
		t.Fatal("the card is not in streaming mode")
	}
	// 40 updates over about 400 ms: the 150 ms interval lets at most four
	// through (the fake's own limit, 10 a second, would let ten), each
	// with a higher sequence (the fake refuses any other).
	text := ""
	start := time.Now()
	for i := range 40 {
		text += "token " + string(rune('a'+i%26)) + " "
		if err := s.Update(ctx, text); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)
	sent, err := s.Close(ctx, text+"done.")
	if err != nil || len(sent) != 0 || s.Fallback() {
		t.Fatalf("close: %v, %d posts, fallback %v", err, len(sent), s.Fallback())
	}
	card := fs.Card(s.CardID())
	if card.Text != text+"done." || card.Streaming {
		t.Fatalf("final card: text %q streaming %v", card.Text, card.Streaming)
	}
	// One push per 150 ms at most (+1 for the first, +1 for Close).
	if n, most := len(card.Updates), int(elapsed/(150*time.Millisecond))+2; n < 2 || n > most || n >= 40 {
		t.Fatalf("%d card updates for 40 calls in %v; want 2 to %d", n, elapsed, most)
	}
	if err := s.Update(ctx, "late"); !errors.Is(err, ErrClosed) {
		t.Fatalf("update after close: %v", err)
	}
	if _, err := s.Close(ctx, "again"); !errors.Is(err, ErrClosed) {
		t.Fatalf("second close: %v", err)
	}
}

func TestStreamFallsBackToPosts(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	fs.SetFailCardCreate(true)
	s, err := c.StartStream(t.Context(), Destination{To: Recipient{ByOpenID, "ou_owner"}}, "row-2")
	if err != nil || !s.Fallback() {
		t.Fatalf("start: %v, fallback %v", err, s.Fallback())
	}
	_ = s.Update(t.Context(), "partial")
	sent, err := s.Close(t.Context(), "the **answer**")
	msgs := fs.Messages()
	if err != nil || len(sent) != 1 || len(msgs) != 1 || msgs[0].MsgType != "post" || !strings.Contains(msgs[0].Content, "the **answer**") || msgs[0].UUID != "row-2-p-0" {
		t.Fatalf("fallback: %v, %+v", err, msgs)
	}
}

func TestStreamLongFinalGoesAsPosts(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, func(o *Options) { o.PerRecipientPerSecond = 1000 })
	fs.SetRecipientQPS(1000)
	s, err := c.StartStream(t.Context(), Destination{To: Recipient{ByChatID, "oc_1"}}, "row-3")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("line of output\n", 3000) // 45,000 bytes
	if err := s.Update(t.Context(), long); err != nil {
		t.Fatal(err)
	}
	sent, err := s.Close(t.Context(), long)
	if err != nil {
		t.Fatal(err)
	}
	card := fs.Card(s.CardID())
	if len(card.Text) > MaxCardTextBytes || !strings.Contains(card.Text, "full answer follows") || card.Streaming {
		t.Fatalf("card: %d bytes, streaming %v", len(card.Text), card.Streaming)
	}
	for _, u := range card.Updates {
		if len(u) > MaxCardTextBytes {
			t.Fatalf("a card update of %d bytes", len(u))
		}
	}
	var got strings.Builder
	for _, m := range fs.Messages()[1:] {
		var p struct {
			ZhCN struct {
				Content [][]struct{ Text string } `json:"content"`
			} `json:"zh_cn"`
		}
		if err := json.Unmarshal([]byte(m.Content), &p); err != nil {
			t.Fatal(err)
		}
		for _, para := range p.ZhCN.Content {
			got.WriteString(para[0].Text)
		}
	}
	if len(sent) < 2 || strings.ReplaceAll(got.String(), "\n", "") != strings.ReplaceAll(long, "\n", "") {
		t.Fatalf("%d posts; the full text did not arrive", len(sent))
	}
}

func TestApprovalCardMessage(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	m := ApprovalCard("Run a command?", "`rm -rf build`", "req-5")
	if _, err := c.Send(t.Context(), Recipient{ByOpenID, "ou_owner"}, m, "row-4"); err != nil {
		t.Fatal(err)
	}
	got := fs.Messages()[0].Content
	for _, want := range []string{`"req":"req-5"`, `"d":"allow"`, `"d":"deny"`, `"schema":"2.0"`, "rm -rf build"} {
		if !strings.Contains(got, want) {
			t.Errorf("approval card lacks %s: %s", want, got)
		}
	}
}

// BenchmarkSend measures send throughput against the fake over loopback,
// with pacing off (one recipient per iteration would be paced to 5/s).
func BenchmarkSend(b *testing.B) {
	fs, c := newFake(b, func(o *Options) { o.PerRecipientPerSecond = 1 << 30 })
	fs.SetRecipientQPS(1 << 30)
	ctx := b.Context()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := c.Send(ctx, Recipient{ByChatID, "oc_bench"}, TextMessage("hello"), "bench-"+strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// The fake is strict about sequences, as the platform is: a repeated or
// lower sequence is refused, so the stream tests prove the client's order.
func TestFakeRefusesStaleSequence(t *testing.T) {
	t.Parallel()
	_, c := newFake(t, nil)
	s, err := c.StartStream(t.Context(), Destination{To: Recipient{ByChatID, "oc_1"}}, "row-5")
	if err != nil || s.Fallback() {
		t.Fatal(err)
	}
	push := func(seq int) error {
		return c.call(t.Context(), request{op: "update card", method: "PUT",
			path:     "/open-apis/cardkit/v1/cards/" + s.CardID() + "/elements/main/content",
			jsonBody: map[string]any{"content": "x", "sequence": seq}, noRetry: true}, nil)
	}
	if err := push(2); err != nil {
		t.Fatal(err)
	}
	for _, seq := range []int{2, 1} {
		var ae *APIError
		if err := push(seq); !errors.As(err, &ae) || ae.Retryable() {
			t.Fatalf("sequence %d after 2: %v, want a final refusal", seq, err)
		}
	}
}

// Flush shows an update that the interval skipped, so a pause in the
// answer does not leave the card behind.
func TestStreamFlush(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, func(o *Options) { o.MinStreamInterval = 200 * time.Millisecond })
	s, err := c.StartStream(t.Context(), Destination{To: Recipient{ByChatID, "oc_1"}}, "row-6")
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Update(t.Context(), "one")
	_ = s.Update(t.Context(), "one two") // skipped: too soon
	if got := fs.Card(s.CardID()).Text; got != "one" {
		t.Fatalf("card = %q", got)
	}
	if err := s.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := fs.Card(s.CardID()).Text; got != "one two" {
		t.Fatalf("after Flush: %q", got)
	}
	n := len(fs.Card(s.CardID()).Updates)
	if err := s.Flush(t.Context()); err != nil || len(fs.Card(s.CardID()).Updates) != n {
		t.Fatalf("a second Flush pushed again: %v", err)
	}
	if _, err := s.Close(t.Context(), "one two three"); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(t.Context()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Flush after Close: %v", err)
	}
}

// Updates faster than the platform's 10 per second per card meet 230020:
// those frames are skipped, the card keeps streaming, and the final
// update, retried, lands.
func TestStreamRateLimitedFramesSkipped(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, func(o *Options) { o.MinStreamInterval = time.Nanosecond })
	s, err := c.StartStream(t.Context(), Destination{To: Recipient{ByChatID, "oc_1"}}, "row-7")
	if err != nil {
		t.Fatal(err)
	}
	text := ""
	for i := range 30 {
		text += strconv.Itoa(i) + " "
		if err := s.Update(t.Context(), text); err != nil {
			t.Fatal(err)
		}
	}
	if s.Fallback() {
		t.Fatal("a rate-limited frame made the stream give up its card")
	}
	if n := len(fs.Card(s.CardID()).Updates); n < 1 || n >= 30 {
		t.Fatalf("%d updates accepted in a burst of 30; the fake allows 10 a second", n)
	}
	if _, err := s.Close(t.Context(), text+"end"); err != nil {
		t.Fatal(err)
	}
	if card := fs.Card(s.CardID()); card.Text != text+"end" || card.Streaming {
		t.Fatalf("final card %q, streaming %v", card.Text, card.Streaming)
	}
}

// TestFinishCardOfALostStream: a card whose Stream was lost (a restart)
// is finished with the final text, out of streaming mode, by a sequence
// above the stream's; finishing it again is refused by the platform.
func TestFinishCardOfALostStream(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, func(o *Options) { o.MinStreamInterval = time.Nanosecond })
	ctx := t.Context()
	s, err := c.StartStream(ctx, Destination{To: Recipient{ByChatID, "oc_1"}}, "row-1")
	if err != nil || s.Fallback() {
		t.Fatalf("start: %v", err)
	}
	for _, text := range []string{"a", "ab", "abc"} {
		if err := s.Update(ctx, text); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.FinishCard(ctx, s.CardID(), "the whole answer"); err != nil {
		t.Fatal(err)
	}
	card := fs.Card(s.CardID())
	if card.Text != "the whole answer" || card.Streaming || card.Sequence != OrphanSequence {
		t.Fatalf("card %+v", card)
	}
	if err := c.FinishCard(ctx, s.CardID(), "again"); err == nil {
		t.Fatal("a second finish with the same sequence was accepted")
	}
	if err := c.FinishCard(ctx, "", "x"); err == nil || IsRetryable(err) {
		t.Fatalf("an empty card id: %v, want a refusal", err)
	}
}
