package feishu

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/feishu/feishutest"
)

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{
		{AppID: "a"},
		{AppSecret: "s"},
		{AppID: "a", AppSecret: "s", BaseURL: "open.feishu.cn"},
		{AppID: "a", AppSecret: "s", BaseURL: "ftp://x"},
	} {
		if _, err := New(o); err == nil || IsRetryable(err) {
			t.Errorf("New(%+v) = %v, want a final error", o, err)
		}
	}
}

func TestOptionsNeverShowTheSecret(t *testing.T) {
	t.Parallel()
	o := Options{AppID: "cli_x", AppSecret: "hunter2-secret", BaseURL: LarkBaseURL}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("start", "feishu", o)
	for _, s := range []string{fmt.Sprint(o), fmt.Sprintf("%+v", o), fmt.Sprintf("%#v", o), logs.String()} {
		if strings.Contains(s, "hunter2") || !strings.Contains(s, "cli_x") {
			t.Errorf("%s", s)
		}
	}
}

func TestTokenCachedAndRefreshedBeforeExpiry(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, func(o *Options) { o.TokenRefreshBefore = 2 * time.Second })
	fs.SetTokenExpire(4)
	ctx := t.Context()
	for range 3 {
		if _, err := c.Send(ctx, Recipient{ByChatID, "oc_1"}, TextMessage("hi"), "k"); err != nil {
			t.Fatal(err)
		}
	}
	if n := fs.TokensIssued(); n != 1 {
		t.Fatalf("tokens issued = %d, want 1 (cached)", n)
	}
	time.Sleep(2100 * time.Millisecond) // now under 2 s of validity left
	if _, err := c.Send(ctx, Recipient{ByChatID, "oc_1"}, TextMessage("hi"), "k2"); err != nil {
		t.Fatal(err)
	}
	if n := fs.TokensIssued(); n != 2 {
		t.Fatalf("tokens issued = %d, want 2 (renewed before expiry)", n)
	}
}

func TestTokenRenewedOnExpiredCode(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	if _, err := c.Send(t.Context(), Recipient{ByChatID, "oc_1"}, TextMessage("a"), "k1"); err != nil {
		t.Fatal(err)
	}
	fs.ExpireNextCalls(1)
	if _, err := c.Send(t.Context(), Recipient{ByChatID, "oc_1"}, TextMessage("b"), "k2"); err != nil {
		t.Fatalf("send after the token was revoked: %v", err)
	}
	if n := fs.TokensIssued(); n != 2 {
		t.Fatalf("tokens issued = %d, want 2", n)
	}
	// A token refused twice in a row is reported, not retried forever.
	fs.ExpireNextCalls(2)
	_, err := c.Send(t.Context(), Recipient{ByChatID, "oc_1"}, TextMessage("c"), "k3")
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != CodeTokenExpired {
		t.Fatalf("err = %v, want code %d", err, CodeTokenExpired)
	}
}

func TestBadCredentialsNeverShowTheSecret(t *testing.T) {
	t.Parallel()
	_, c := newFake(t, func(o *Options) { o.AppSecret = "hunter2-very-secret" })
	_, err := c.Send(t.Context(), Recipient{ByChatID, "oc_1"}, TextMessage("a"), "k1")
	if err == nil || IsRetryable(err) {
		t.Fatalf("err = %v, want a final error", err)
	}
	if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "tenant access token") {
		t.Fatalf("error %q: want the failing step and no secret", err)
	}
}

func TestSendIsIdempotentPerKey(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	ctx := t.Context()
	a, err := c.Send(ctx, Recipient{ByOpenID, "ou_owner"}, TextMessage("report"), "outbox-17")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Send(ctx, Recipient{ByOpenID, "ou_owner"}, TextMessage("report"), "outbox-17")
	if err != nil {
		t.Fatal(err)
	}
	msgs := fs.Messages()
	if a.MessageID != b.MessageID || len(msgs) != 1 {
		t.Fatalf("a resend made a second message: %v %v, %d messages", a, b, len(msgs))
	}
	if m := msgs[0]; m.ReceiveIDType != "open_id" || m.ReceiveID != "ou_owner" || m.MsgType != "text" || m.Content != `{"text":"report"}` || m.UUID != "outbox-17" {
		t.Fatalf("message = %+v", m)
	}
	for _, k := range []string{"", strings.Repeat("x", MaxUUIDLen+1)} {
		if _, err := c.Send(ctx, Recipient{ByOpenID, "ou_owner"}, TextMessage("x"), k); err == nil || IsRetryable(err) {
			t.Errorf("key %q: err = %v, want a final error", k, err)
		}
	}
}

func TestReplyAndPost(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	if _, err := c.Reply(t.Context(), "oc_1", "om_in", PostMessage("", "**one**\n\ntwo"), "k"); err != nil {
		t.Fatal(err)
	}
	m := fs.Messages()[0]
	want := `{"zh_cn":{"content":[[{"tag":"md","text":"**one**"}],[{"tag":"md","text":"two"}]],"title":""}}`
	if m.ReplyTo != "om_in" || m.MsgType != "post" || m.Content != want {
		t.Fatalf("message = %+v", m)
	}
}

// The fake allows 5 sends a second per recipient. With the client's own
// limiter off, a burst meets 429s and every message still arrives after
// the wait the platform asked for.
func TestRateLimit429IsWaitedOut(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, func(o *Options) { o.PerRecipientPerSecond = 1000 })
	for i := range 8 {
		if _, err := c.Send(t.Context(), Recipient{ByChatID, "oc_busy"}, TextMessage("x"), "k"+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	if fs.RateLimited() == 0 || len(fs.Messages()) != 8 {
		t.Fatalf("rate limited %d times, %d messages; want some 429s and 8 messages", fs.RateLimited(), len(fs.Messages()))
	}
}

// With the client's limiter at the platform's 5 per second, a burst is
// paced (so the platform, which counts arrivals, does not answer 429 unless
// a loaded machine delays requests unevenly); another recipient is not
// held up.
func TestPerRecipientLimiter(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	start := time.Now()
	for i := range 7 {
		if _, err := c.Send(t.Context(), Recipient{ByChatID, "oc_a"}, TextMessage("x"), "a"+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 1100*time.Millisecond {
		t.Fatalf("7 sends took %v; the limiter did not pace them", d)
	}
	start = time.Now()
	if _, err := c.Send(t.Context(), Recipient{ByChatID, "oc_b"}, TextMessage("x"), "b"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("other recipient waited %v", d)
	}
	if n := fs.RateLimited(); n != 0 {
		t.Logf("%d 429s (requests delayed unevenly on a loaded machine)", n)
	}
}

func TestFinalErrorsAreNotRetried(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	fs.SetDLPWord("13800000000")
	_, err := c.Send(t.Context(), Recipient{ByChatID, "oc_1"}, TextMessage("call 13800000000"), "k")
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != CodeDLPBlocked || IsRetryable(err) || !strings.Contains(err.Error(), "audit") {
		t.Fatalf("err = %v, want a final DLP error", err)
	}
	if fs.RateLimited() != 0 || len(fs.Messages()) != 0 {
		t.Fatal("a blocked message was recorded")
	}
}

func TestRetryableClassification(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		e    APIError
		want bool
	}{
		{APIError{HTTPStatus: 429, Code: CodeRateLimited}, true},
		{APIError{HTTPStatus: 400, Code: CodeCardRateLimited}, true},
		{APIError{HTTPStatus: 502}, true},
		{APIError{HTTPStatus: 400, Code: CodeBadParam}, false},
		{APIError{HTTPStatus: 400, Code: CodeBotNotInChat}, false},
		{APIError{HTTPStatus: 400, Code: CodeNoPermission}, false},
		{APIError{HTTPStatus: 400, Code: CodeDLPBlocked}, false},
		{APIError{HTTPStatus: 400, Code: CodeTooLong}, false},
		{APIError{HTTPStatus: 400, Code: CodeUploadTooLarge}, false},
		{APIError{HTTPStatus: 400, Code: CodeUploadEmpty}, false},
		{APIError{HTTPStatus: 400, Code: CodeBotDisabled}, false},
		{APIError{HTTPStatus: 400, Code: CodeRecalled}, false},
		{APIError{HTTPStatus: 400, Code: CodeTooOld}, false},
		{APIError{HTTPStatus: 400, Code: CodeCardBuildFailed}, false},
		{APIError{HTTPStatus: 400, Code: CodeTokenExpired}, false},
	} {
		if got := c.e.Retryable(); got != c.want {
			t.Errorf("%v: Retryable = %v, want %v", &c.e, got, c.want)
		}
	}
}

func TestSendLongChunksWithDerivedKeys(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, func(o *Options) { o.PerRecipientPerSecond = 1000 })
	fs.SetRecipientQPS(1000)
	para := strings.Repeat("word ", 700) + "\n\n" // 3502 characters
	text := strings.Repeat(para, 3)
	d := Destination{To: Recipient{ByChatID, "oc_1"}, ReplyTo: "om_in"}
	sent, err := c.SendLong(t.Context(), d, text, "row-9")
	if err != nil {
		t.Fatal(err)
	}
	msgs := fs.Messages()
	if len(sent) != 3 || len(msgs) != 3 {
		t.Fatalf("%d sent, %d recorded, want 3", len(sent), len(msgs))
	}
	if msgs[0].ReplyTo != "om_in" || msgs[1].ReplyTo != "" || msgs[2].UUID != "row-9-2" {
		t.Fatalf("messages = %+v", msgs)
	}
	// A resend after a crash repeats nothing.
	if _, err := c.SendLong(t.Context(), d, text, "row-9"); err != nil {
		t.Fatal(err)
	}
	if n := len(fs.Messages()); n != 3 {
		t.Fatalf("%d messages after the resend, want 3", n)
	}
}

func TestUploadsAndAttachments(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	ctx := t.Context()
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0}, 100)...)
	mp4 := append([]byte("\x00\x00\x00\x18ftypmp42"), bytes.Repeat([]byte{0}, 100)...)
	for _, c2 := range []struct {
		name string
		data []byte
		typ  string
		kind string
	}{
		{"shot.png", png, "image", "message"},
		{"clip.mp4", mp4, "media", "mp4"},
		{"report.pdf", []byte("%PDF-1.4 ..."), "file", "pdf"},
		{"data.bin", []byte{1, 2, 3}, "file", "stream"},
	} {
		m, err := c.Attachment(ctx, c2.name, c2.data)
		if err != nil {
			t.Fatalf("%s: %v", c2.name, err)
		}
		up := fs.Uploads()
		last := up[len(up)-1]
		if m.Type != c2.typ || last.Kind != c2.kind || !bytes.Equal(last.Data, c2.data) || !strings.Contains(m.Content, last.Key) {
			t.Fatalf("%s: message %+v, upload %s/%s", c2.name, m, last.Kind, last.Key)
		}
	}
	// An image over the image limit goes as a file; over the file limit
	// or empty, it is refused before any request.
	big := append(append([]byte{}, png...), make([]byte, MaxImageBytes)...)
	if m, err := c.Attachment(ctx, "big.png", big); err != nil || m.Type != "file" {
		t.Fatalf("big image: %+v, %v", m, err)
	}
	n := len(fs.Uploads())
	for _, data := range [][]byte{nil, make([]byte, MaxFileBytes+1)} {
		if _, err := c.UploadFile(ctx, "x.bin", data, 0); err == nil || IsRetryable(err) {
			t.Fatalf("upload of %d bytes: err = %v", len(data), err)
		}
	}
	if len(fs.Uploads()) != n {
		t.Fatal("a refused upload reached the platform")
	}
}

func TestDownload(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	fs.AddResource("om_1", "file_v3_a", []byte("%PDF-1.4 hello"))
	var buf bytes.Buffer
	ct, err := c.Download(t.Context(), "om_1", "file_v3_a", false, &buf, 0)
	if err != nil || buf.String() != "%PDF-1.4 hello" || ct != "application/pdf" {
		t.Fatalf("download: %q, %q, %v", buf.String(), ct, err)
	}
	if _, err := c.Download(t.Context(), "om_1", "file_v3_a", false, &buf, 3); err == nil {
		t.Fatal("a download over the limit succeeded")
	}
	var ae *APIError
	if _, err := c.Download(t.Context(), "om_2", "file_v3_a", false, &buf, 0); !errors.As(err, &ae) {
		t.Fatalf("key of another message: err = %v", err)
	}
}

func TestLiveSmoke(t *testing.T) {
	id, secret := os.Getenv("FEISHU_APP_ID"), os.Getenv("FEISHU_APP_SECRET")
	if id == "" || secret == "" {
		t.Skip("set FEISHU_APP_ID and FEISHU_APP_SECRET (and FEISHU_BASE_URL for Lark, FEISHU_TEST_OPEN_ID to send) to run against the real platform")
	}
	c, err := New(Options{AppID: id, AppSecret: secret, BaseURL: os.Getenv("FEISHU_BASE_URL")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.tenantToken(t.Context()); err != nil {
		t.Fatalf("token: %v", err)
	}
	if _, err := c.Bot(t.Context()); err != nil {
		t.Fatalf("bot info: %v", err)
	}
	if _, _, err := c.endpoint(t.Context()); err != nil {
		t.Fatalf("long connection endpoint: %v", err)
	}
	if to := os.Getenv("FEISHU_TEST_OPEN_ID"); to != "" {
		key := "scv-smoke-" + time.Now().UTC().Format("20060102T150405")
		if _, err := c.Send(t.Context(), Recipient{ByOpenID, to}, TextMessage("SCV live smoke test"), key); err != nil {
			t.Fatalf("send: %v", err)
		}
	}
}

func TestBotInfo(t *testing.T) {
	t.Parallel()
	_, c := newFake(t, nil)
	b, err := c.Bot(t.Context())
	if err != nil || b.OpenID != feishutest.BotOpenID || b.AppName != "SCV" {
		t.Fatalf("bot = %+v, %v", b, err)
	}
}

// TestMessageText: a quoted message's text is fetched and read as an
// inbound message's is (a post's paragraphs, mentions removed).
func TestMessageText(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	fs.AddMessage("om_q", "post", map[string]any{"title": "Plan", "content": [][]map[string]string{
		{{"tag": "at", "user_id": "@_user_1"}, {"tag": "text", "text": " paint the door blue"}}}})
	got, err := c.MessageText(t.Context(), "om_q")
	if err != nil || !strings.Contains(got, "Plan") || !strings.Contains(got, "paint the door blue") || strings.Contains(got, "@_user_1") {
		t.Fatalf("MessageText = %q, %v", got, err)
	}
	if _, err := c.MessageText(t.Context(), "om_missing"); err == nil {
		t.Fatal("a missing message was read")
	}
}
