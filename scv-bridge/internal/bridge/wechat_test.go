package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/scv-cli/scv/scv-bridge/internal/core"
	"github.com/scv-cli/scv/scv-bridge/internal/store"
	"github.com/scv-cli/scv/scv-bridge/internal/wechat"
	"github.com/scv-cli/scv/scv-bridge/internal/wechat/cdncrypt"
	"github.com/scv-cli/scv/scv-bridge/internal/wechat/ilinktest"
	"github.com/scv-cli/scv/shared/chatlog"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/testkit/bins"
)

const stranger = "o9cq800strangerBBB@im.wechat"

type wxRig struct {
	fs    *ilinktest.Server
	model *fakeopenai.Server
	opts  Options
	acct  WeChatAccount
}

// newWxRig starts a fake iLink and a scripted model, and binds the account
// "home" to the fake as a login would.
func newWxRig(t *testing.T, replies ...fakeopenai.Reply) *wxRig {
	t.Helper()
	fs := ilinktest.New()
	t.Cleanup(fs.Close)
	fs.SetHold(200 * time.Millisecond)
	t.Cleanup(func() {
		if errs := fs.HeaderErrors(); len(errs) != 0 {
			t.Errorf("wrong bot headers: %v", errs)
		}
	})
	model := fakeopenai.Start(t, replies...)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(model.Config("")), 0o600); err != nil {
		t.Fatal(err)
	}
	acct := WeChatAccount{Name: "home", Config: config.DefaultWeChatAccount()}
	acct.Config.CDNURL = fs.CDNURL()
	creds := wechat.Credentials{Token: ilinktest.BotToken, BaseURL: fs.URL, BotID: ilinktest.BotID, OwnerID: ilinktest.OwnerID, BoundAt: time.Now().UTC()}
	if err := wechat.WriteCredentials(acct.Config.CredentialsFile(home, "home"), creds); err != nil {
		t.Fatal(err)
	}
	return &wxRig{fs: fs, model: model, acct: acct,
		opts: Options{Home: home, Archive: filepath.Join(home, "archive"), Cwd: t.TempDir(),
			ServerPath: bins.Need(t, "scv-server"), ServerEnv: append(os.Environ(), "SCV_HOME="+home),
			HTTPClient: fs.Client(), Quiet: 20 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
}

// start runs the account until the returned stop is called; stop returns
// RunWeChat's result.
func (r *wxRig) start(t *testing.T) func() error {
	return runUntilStopped(t, func(ctx context.Context) error { return RunWeChat(ctx, r.opts, r.acct) })
}

func (r *wxRig) state(t *testing.T) WeChatState {
	t.Helper()
	s, err := ReadWeChatState(WeChatStatePath(r.opts.Home, "home"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wxMessage is the JSON of an inbound message with the given items.
func wxMessage(id, from string, items ...string) string {
	return fmt.Sprintf(`{"seq":1,"message_id":%q,"from_user_id":%q,"to_user_id":%q,"message_type":1,"message_state":2,`+
		`"context_token":"ctx-%s","create_time_ms":%d,"item_list":[%s]}`, id, from, ilinktest.BotID, id, time.Now().UnixMilli(), strings.Join(items, ","))
}

func wxText(text string) string {
	b, _ := json.Marshal(text)
	return `{"type":1,"text_item":{"text":` + string(b) + `}}`
}

// sentText is the text of a message the fake accepted.
func sentText(s ilinktest.Sent) string {
	var it struct {
		Text struct {
			Text string `json:"text"`
		} `json:"text_item"`
	}
	if len(s.Items) > 0 {
		_ = json.Unmarshal(s.Items[0], &it)
	}
	return it.Text.Text
}

func TestWeChatOwnerRoundTripMediaAndRedelivery(t *testing.T) {
	t.Parallel()
	r := newWxRig(t, fakeopenai.Script(fakeopenai.Text("## Done\n\nA **nice** cat.")))
	stop := r.start(t)
	picture := "\xff\xd8\xff\xe0 the cat picture" // JPEG's magic, so the file is named .jpg
	param, key := r.fs.AddMedia([]byte(picture))
	img := fmt.Sprintf(`{"type":2,"image_item":{"media":{"encrypt_query_param":%q},"aeskey":"%x"}}`, param, key)
	r.fs.Deliver(wxMessage("m1", ilinktest.OwnerID, wxText("what is this?"), img))
	waitFor(t, "the reply", func() bool { return len(r.fs.Sent()) == 1 })
	sent := r.fs.Sent()[0]
	if got := sentText(sent); got != "Done\n\nA nice cat." || sent.ContextToken != "ctx-m1" || sent.To != ilinktest.OwnerID {
		t.Fatalf("the reply %+v (%q); want plain text to the owner with the message's context token", sent, got)
	}
	if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("RunWeChat = %v", err)
	}
	// The image is saved, private, and its path was in the owner's prompt
	// with the tools of the owner's session.
	saved, _ := filepath.Glob(filepath.Join(r.opts.Home, "state", "media", "wechat", "home", ilinktest.OwnerID, "*-image.jpg"))
	if len(saved) != 1 {
		t.Fatalf("saved images %q, want one", saved)
	}
	path := saved[0]
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the saved image: %v, %v", fi, err)
	}
	if data, _ := os.ReadFile(path); string(data) != picture {
		t.Fatalf("the saved image holds %q", data)
	}
	req := r.model.Requests()[0]
	if last := req.Messages[len(req.Messages)-1].Content; !strings.Contains(last, "what is this?") || !strings.Contains(last, path) {
		t.Fatalf("the prompt %q lacks the text or the image's path", last)
	}
	if len(req.ToolNames()) == 0 {
		t.Fatal("the owner's session has no tools")
	}
	// An old cursor brings the same batch again: deduplicated.
	st := r.state(t)
	st.Cursor = ""
	data, _ := json.Marshal(st)
	if err := os.WriteFile(WeChatStatePath(r.opts.Home, "home"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	stop = r.start(t)
	waitFor(t, "the old cursor's batch", func() bool { return r.state(t).Cursor != "" })
	time.Sleep(300 * time.Millisecond)
	if n, reqs := len(r.fs.Sent()), len(r.model.Requests()); n != 1 || reqs != 1 {
		t.Fatalf("after a redelivery: %d sent, %d model requests; want 1 and 1", n, reqs)
	}
	// (A stop between WeChat taking the reply and the row being marked
	// sent is resent by the second run under the same client_id.)
	rows, err := r.outbox(t, stop)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].ID != sent.ClientID || rows[0].State != store.Sent {
		t.Fatalf("outbox %+v; want one sent row whose id is the client_id %s", rows, sent.ClientID)
	}
	if _, err := os.Stat(filepath.Join(r.opts.Archive, "wechat", "home", ilinktest.OwnerID)); err != nil {
		t.Fatalf("no chat log for the owner: %v", err)
	}
}

// outbox stops the bridge and lists the account's outbox.
func (r *wxRig) outbox(t *testing.T, stop func() error) ([]store.Outbound, error) {
	t.Helper()
	if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("RunWeChat = %v", err)
	}
	st, err := store.Open(StorePath(r.opts.Home, "wechat", "home"), store.Options{})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.Rows("")
}

func TestWeChatStrangerGetsAToolFreeSession(t *testing.T) {
	t.Parallel()
	r := newWxRig(t, fakeopenai.Script(fakeopenai.Text("Hello stranger.")))
	r.start(t)
	r.fs.Deliver(wxMessage("s1", stranger, wxText("hi")))
	waitFor(t, "the reply", func() bool { return len(r.fs.Sent()) == 1 })
	if reqs := r.model.Requests(); len(reqs) != 1 || len(reqs[0].ToolNames()) != 0 {
		t.Fatalf("a stranger's session had tools: %v", reqs[0].ToolNames())
	}
	if _, err := os.Stat(filepath.Join(r.opts.Archive, "wechat", "home", stranger)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a stranger's chat was logged: %v", err)
	}
}

// TestWeChatRestartBetweenPersistAndSend: WeChat takes the reply but the
// bridge never learns it (the answer is lost), then the bridge stops. The
// next run sends the row again with the same client_id, and the user sees
// the reply once; the message is not answered twice.
func TestWeChatRestartBetweenPersistAndSend(t *testing.T) {
	t.Parallel()
	r := newWxRig(t, fakeopenai.Script(fakeopenai.Text("Exactly once.")))
	r.fs.LoseSendAnswers(100)
	stop := r.start(t)
	r.fs.Deliver(wxMessage("m1", ilinktest.OwnerID, wxText("hello")))
	waitFor(t, "a send whose answer is lost", func() bool { return r.fs.SendCalls() >= 1 })
	if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("RunWeChat = %v", err)
	}
	r.fs.LoseSendAnswers(0)
	calls := r.fs.SendCalls()
	r.start(t)
	waitFor(t, "the resend", func() bool { return r.fs.SendCalls() > calls })
	time.Sleep(300 * time.Millisecond)
	if sent := r.fs.Sent(); len(sent) != 1 || sentText(sent[0]) != "Exactly once." {
		t.Fatalf("the user saw %+v; want the reply once", sent)
	}
	if n := len(r.model.Requests()); n != 1 {
		t.Fatalf("%d model requests; want 1", n)
	}
}

// TestWeChatHeldReportsFlushedOnNextInbound: with a budget of 3 the
// answer uses one send, and a background report may use none of the rest
// (one is kept for a notice, one for a final answer), so the report is
// held, one notice says so, and the owner's next message brings it,
// merged, before the answer to that message.
func TestWeChatHeldReportsFlushedOnNextInbound(t *testing.T) {
	t.Parallel()
	r := newWxRig(t,
		fakeopenai.Script(fakeopenai.ToolCall("call_1", "agent", `{"agent":"claude","prompt":"land the fix","background":true}`)),
		fakeopenai.Script(fakeopenai.Text("Started job-1.")),
		fakeopenai.Script(fakeopenai.Text("job-1 finished: the fix landed.")),
		fakeopenai.Script(fakeopenai.Text("You are welcome.")))
	r.acct.Config.SendBudget = 3
	r.fakeClaude(t)
	r.start(t)
	r.fs.Deliver(wxMessage("m1", ilinktest.OwnerID, wxText("delegate it")))
	waitFor(t, "the answer and the notice", func() bool { return len(r.fs.Sent()) == 2 })
	time.Sleep(300 * time.Millisecond)
	sent := r.fs.Sent()
	if len(sent) != 2 || sentText(sent[0]) != "Started job-1." || sentText(sent[1]) != wechat.HeldNotice(1) {
		t.Fatalf("sent %q, %q; want the answer and the notice", sentText(sent[0]), sentText(sent[1]))
	}
	if st := r.state(t); st.Held[ilinktest.OwnerID] != 1 {
		t.Fatalf("the state file's held reports: %v; want 1 for the owner", st.Held)
	}
	r.fs.Deliver(wxMessage("m2", ilinktest.OwnerID, wxText("ok, thanks")))
	waitFor(t, "the held report and the answer", func() bool { return len(r.fs.Sent()) == 4 })
	sent = r.fs.Sent()
	if sentText(sent[2]) != "job-1 finished: the fix landed." || sentText(sent[3]) != "You are welcome." {
		t.Fatalf("after the owner wrote: %q, %q; want the held report, then the answer", sentText(sent[2]), sentText(sent[3]))
	}
	if sent[2].ContextToken != "ctx-m2" {
		t.Fatalf("the flushed report used the context token %q; want the latest", sent[2].ContextToken)
	}
	waitFor(t, "the state file without held reports", func() bool { return len(r.state(t).Held) == 0 })
	if n := r.fs.CallsWhileThrottled(); n != 0 {
		t.Fatalf("%d sends were refused", n)
	}
}

// fakeClaude puts a `claude` that answers at once on the server's PATH.
func (r *wxRig) fakeClaude(t *testing.T) {
	t.Helper()
	userHome := t.TempDir()
	bin := filepath.Join(userHome, ".local", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(fakeClaude), 0o755); err != nil {
		t.Fatal(err)
	}
	r.opts.ServerEnv = append(r.opts.ServerEnv, "HOME="+userHome)
}

// TestWeChatNoCallsWhileThrottled: WeChat refuses the second piece of a
// long answer (ret=-2); from then on the bridge makes no send at all, and
// the next answer waits in the outbox.
func TestWeChatNoCallsWhileThrottled(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 1000) + "\n\n" + strings.Repeat("more ", 1000)
	r := newWxRig(t, fakeopenai.Script(fakeopenai.Text(long)), fakeopenai.Script(fakeopenai.Text("Later.")))
	r.fs.SetBudget(1)
	stop := r.start(t)
	r.fs.Deliver(wxMessage("m1", ilinktest.OwnerID, wxText("tell me a lot")))
	waitFor(t, "the refusal", func() bool { return r.fs.SendCalls() == 2 })
	if first := sentText(r.fs.Sent()[0]); utf8.RuneCountInString(first) > wechat.ChunkRunes || !strings.HasSuffix(first, "word") {
		t.Fatalf("the first piece has %d characters and ends %q; want at most %d, cut between words",
			utf8.RuneCountInString(first), first[max(0, len(first)-10):], wechat.ChunkRunes)
	}
	r.fs.Deliver(wxMessage("m2", ilinktest.OwnerID, wxText("and then?")))
	waitFor(t, "the second answer", func() bool { return len(r.model.Requests()) == 2 })
	time.Sleep(500 * time.Millisecond)
	if calls, during := r.fs.SendCalls(), r.fs.CallsWhileThrottled(); calls != 2 || during != 0 {
		t.Fatalf("%d send calls, %d during the penalty; want 2 and none", calls, during)
	}
	until := r.state(t).Budget.ThrottledUntil
	if time.Until(until) < 59*time.Minute {
		t.Fatalf("throttled until %v; want at least an hour", until)
	}
	rows, err := r.outbox(t, stop)
	if err != nil {
		t.Fatal(err)
	}
	pending := 0
	for _, o := range rows {
		if o.State == store.Pending {
			pending++
		}
		if o.State == store.Dead {
			t.Fatalf("a row was given up during the penalty: %+v", o)
		}
	}
	if pending != 2 {
		t.Fatalf("outbox %+v; want the rest of the first answer and the second answer pending", rows)
	}
	// A restart keeps the penalty: still no call.
	r.start(t)
	waitFor(t, "the restarted bridge's state", func() bool { return r.state(t).Updated.After(until.Add(-2 * time.Hour)) })
	time.Sleep(500 * time.Millisecond)
	if calls := r.fs.SendCalls(); calls != 2 {
		t.Fatalf("%d send calls after a restart during the penalty; want still 2", calls)
	}
}

// TestWeChatVoiceTranscriptFoundByChatHistory: a voice message's
// transcript is logged as such and the owner's session finds it with
// chat_history.
func TestWeChatVoiceTranscriptFoundByChatHistory(t *testing.T) {
	t.Parallel()
	r := newWxRig(t,
		fakeopenai.Script(fakeopenai.Text("Noted.")),
		fakeopenai.Script(fakeopenai.ToolCall("call_1", "chat_history", `{"action":"search","query":"blue door"}`)),
		fakeopenai.Script(fakeopenai.Text("You said to paint the blue door.")))
	r.start(t)
	param, key := r.fs.AddMedia([]byte("#!SILK_V3 voice"))
	voice := fmt.Sprintf(`{"type":3,"voice_item":{"media":{"encrypt_query_param":%q,"aes_key":%q},"playtime":2300,"text":"paint the blue door"}}`,
		param, cdncrypt.KeyForSend(key))
	r.fs.Deliver(wxMessage("v1", ilinktest.OwnerID, voice))
	waitFor(t, "the first answer", func() bool { return len(r.fs.Sent()) == 1 })
	if p := r.model.Requests()[0].Messages; !strings.Contains(p[len(p)-1].Content, "transcript: paint the blue door") {
		t.Fatalf("the prompt %q lacks the transcript", p[len(p)-1].Content)
	}
	r.fs.Deliver(wxMessage("m2", ilinktest.OwnerID, wxText("what did I say about the door?")))
	waitFor(t, "the second answer", func() bool { return len(r.fs.Sent()) == 2 })
	reqs := r.model.Requests()
	var result string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "tool" {
			result = m.Content
		}
	}
	if !strings.Contains(result, "paint the blue door") || !strings.Contains(result, `"who":"owner"`) {
		t.Fatalf("chat_history gave %q; want the transcript", result)
	}
	// In the log it is a voice message with its transcript, not text.
	var logText string
	_ = filepath.WalkDir(filepath.Join(r.opts.Archive, "wechat", "home", ilinktest.OwnerID), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			b, _ := os.ReadFile(p)
			logText += string(b)
		}
		return nil
	})
	if !strings.Contains(logText, `"voice":true,"transcript":"paint the blue door"`) {
		t.Fatalf("the chat log:\n%s", logText)
	}
}

// TestWeChatApprovalCodeNeverReachesTheModel: "yes abcde" is a decision
// the bridge answers; no model sees it.
func TestWeChatApprovalCodeNeverReachesTheModel(t *testing.T) {
	t.Parallel()
	r := newWxRig(t)
	r.start(t)
	r.fs.Deliver(wxMessage("a1", ilinktest.OwnerID, wxText("yes abcde")))
	waitFor(t, "the answer", func() bool { return len(r.fs.Sent()) == 1 })
	if got := sentText(r.fs.Sent()[0]); !strings.Contains(got, "No approval with the code abcde is waiting") {
		t.Fatalf("the answer %q", got)
	}
	if n := len(r.model.Requests()); n != 0 {
		t.Fatalf("%d model requests; an approval code must never reach a model", n)
	}
}

// TestWeChatSessionExpiryUnbindsTheAccount: errcode -14 stops the account,
// records it, and the next run refuses until the account is bound again.
func TestWeChatSessionExpiryUnbindsTheAccount(t *testing.T) {
	t.Parallel()
	r := newWxRig(t)
	r.fs.ExpireSession()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := RunWeChat(ctx, r.opts, r.acct)
	if !errors.Is(err, wechat.ErrSessionExpired) || !strings.Contains(err.Error(), "scv channels login wechat --account home") {
		t.Fatalf("RunWeChat = %v; want the expired session and what to do", err)
	}
	if r.state(t).SessionExpired.IsZero() {
		t.Fatal("the state file does not record the expiry")
	}
	err = RunWeChat(ctx, r.opts, r.acct)
	if err == nil || !strings.Contains(err.Error(), "bind it again") {
		t.Fatalf("a run after the expiry = %v; want a refusal", err)
	}
	// A new binding (later than the expiry) serves again.
	time.Sleep(10 * time.Millisecond)
	creds := wechat.Credentials{Token: ilinktest.BotToken, BaseURL: r.fs.URL, OwnerID: ilinktest.OwnerID, BoundAt: time.Now().UTC()}
	if err := wechat.WriteCredentials(r.acct.Config.CredentialsFile(r.opts.Home, "home"), creds); err != nil {
		t.Fatal(err)
	}
	stop := r.start(t)
	time.Sleep(300 * time.Millisecond)
	if err := stop(); !errors.Is(err, context.Canceled) && err != nil {
		t.Fatalf("a run after a new binding = %v", err)
	}
}

func TestSecondBridgeForTheSameWeChatAccountIsRefused(t *testing.T) {
	t.Parallel()
	r := newWxRig(t)
	r.start(t)
	waitFor(t, "the first bridge's state", func() bool {
		_, err := os.Stat(WeChatStatePath(r.opts.Home, "home"))
		return err == nil
	})
	if err := RunWeChat(context.Background(), r.opts, r.acct); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("a second bridge = %v, want ErrLocked", err)
	}
}

// sentFile is the file item of a message the fake accepted.
type sentFile struct {
	Type int `json:"type"`
	File struct {
		Media struct {
			Param string `json:"encrypt_query_param"`
		} `json:"media"`
		Name string `json:"file_name"`
		Len  string `json:"len"`
	} `json:"file_item"`
	Image struct {
		Media struct {
			Param string `json:"encrypt_query_param"`
		} `json:"media"`
	} `json:"image_item"`
}

func sentItem(t *testing.T, s ilinktest.Sent) sentFile {
	t.Helper()
	var it sentFile
	if len(s.Items) != 1 || json.Unmarshal(s.Items[0], &it) != nil {
		t.Fatalf("the message %+v has not one item", s)
	}
	return it
}

// attachRig is a rig whose model attaches a report from the workspace
// with chat_attach (and, with image, a chart after it), then answers; it
// returns the report's content.
func attachRig(t *testing.T, image bool, more ...fakeopenai.Reply) (*wxRig, []byte) {
	t.Helper()
	work := t.TempDir()
	report := []byte("%PDF-1.4 the quarterly report, not a multiple of sixteen bytes")
	if err := os.WriteFile(filepath.Join(work, "report.pdf"), report, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "chart.png"), pngBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	replies := []fakeopenai.Reply{fakeopenai.Script(fakeopenai.ToolCall("call_1", "chat_attach", `{"path":"report.pdf","caption":"the numbers"}`))}
	if image {
		replies = append(replies, fakeopenai.Script(fakeopenai.ToolCall("call_2", "chat_attach", `{"path":"chart.png"}`)))
	}
	replies = append(append(replies, fakeopenai.Script(fakeopenai.Text("Here it is."))), more...)
	r := newWxRig(t, replies...)
	r.opts.Cwd = work
	return r, report
}

// checkFileSent: the fake CDN took the report once (its padded size and
// MD5 checked by the fake) as the first upload, and the file message
// points at that upload.
func checkFileSent(t *testing.T, r *wxRig, msg ilinktest.Sent, report []byte) {
	t.Helper()
	ups := r.fs.Uploads()
	if len(ups) == 0 || ups[0].MediaType != 3 || ups[0].To != ilinktest.OwnerID || string(ups[0].Plain) != string(report) {
		t.Fatalf("uploads %+v; want the report first, as a file to the owner", ups)
	}
	it := sentItem(t, msg)
	if it.Type != 4 || it.File.Name != "report.pdf" || it.File.Len != fmt.Sprint(len(report)) ||
		it.File.Media.Param != "dl-"+ups[0].FileKey || msg.To != ilinktest.OwnerID {
		t.Fatalf("the file message %+v (%s); want report.pdf pointing at the upload", it, msg.Items[0])
	}
	waitFor(t, "the outbox copies removed", func() bool {
		ents, _ := os.ReadDir(chatlog.OutboxDir(r.opts.Home))
		return len(ents) == 0
	})
}

// TestWeChatAttachedFileDelivered: files the model attaches with
// chat_attach are uploaded to the CDN and sent after the answer (whose
// text carries the caption), the PDF as a file message and the PNG as an
// image message, each exactly once, keyed by its outbox row; their copies
// leave the outbox.
func TestWeChatAttachedFileDelivered(t *testing.T) {
	t.Parallel()
	r, report := attachRig(t, true)
	stop := r.start(t)
	r.fs.Deliver(wxMessage("m1", ilinktest.OwnerID, wxText("send me the report")))
	waitFor(t, "the answer and the files", func() bool { return len(r.fs.Sent()) == 3 })
	time.Sleep(300 * time.Millisecond)
	sent := r.fs.Sent()
	if got := sentText(sent[0]); len(sent) != 3 || !strings.Contains(got, "Here it is.") || !strings.Contains(got, "report.pdf: the numbers") {
		t.Fatalf("sent %d messages, the first %q; want the answer with the caption, then the files", len(sent), got)
	}
	checkFileSent(t, r, sent[1], report)
	ups := r.fs.Uploads()
	if it := sentItem(t, sent[2]); len(ups) != 2 || ups[1].MediaType != 1 || !bytes.Equal(ups[1].Plain, pngBytes) ||
		it.Type != 2 || it.Image.Media.Param != "dl-"+ups[1].FileKey {
		t.Fatalf("the chart: upload %+v, message %s; want an image upload and an image message", ups, sent[2].Items[0])
	}
	rows, err := r.outbox(t, stop)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[1].Kind != core.KindFile || rows[1].State != store.Sent || rows[1].ID != sent[1].ClientID ||
		rows[2].State != store.Sent || rows[2].ID != sent[2].ClientID {
		t.Fatalf("outbox %+v; want the file rows sent, their ids the client_ids", rows)
	}
}

// TestWeChatHeldFileSentAsFileOnNextInbound: with a budget of 3 the
// answer uses one send and the file (counted as a report) is held, with
// the notice; the owner's next message releases it as a file, not merged
// into text.
func TestWeChatHeldFileSentAsFileOnNextInbound(t *testing.T) {
	t.Parallel()
	r, report := attachRig(t, false, fakeopenai.Script(fakeopenai.Text("You are welcome.")))
	r.acct.Config.SendBudget = 3
	r.start(t)
	r.fs.Deliver(wxMessage("m1", ilinktest.OwnerID, wxText("send me the report")))
	waitFor(t, "the answer and the notice", func() bool { return len(r.fs.Sent()) == 2 })
	time.Sleep(300 * time.Millisecond)
	sent := r.fs.Sent()
	if len(sent) != 2 || sentText(sent[1]) != wechat.HeldNotice(1) || len(r.fs.Uploads()) != 0 {
		t.Fatalf("sent %+v, %d uploads; want the answer and the notice, nothing uploaded", sent, len(r.fs.Uploads()))
	}
	if st := r.state(t); st.Held[ilinktest.OwnerID] != 1 {
		t.Fatalf("the state file's held rows: %v; want 1 for the owner", st.Held)
	}
	r.fs.Deliver(wxMessage("m2", ilinktest.OwnerID, wxText("thanks")))
	waitFor(t, "the held file and the answer", func() bool { return len(r.fs.Sent()) == 4 })
	sent = r.fs.Sent()
	if sent[2].ContextToken != "ctx-m2" || sentText(sent[3]) != "You are welcome." {
		t.Fatalf("after the owner wrote: %s, %q; want the file, then the answer", sent[2].Items[0], sentText(sent[3]))
	}
	checkFileSent(t, r, sent[2], report)
	if n := r.fs.CallsWhileThrottled(); n != 0 {
		t.Fatalf("%d sends were refused", n)
	}
}
