package bridge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/core"
	"github.com/scv-cli/scv/scv-bridge/internal/feishu"
	"github.com/scv-cli/scv/scv-bridge/internal/feishu/feishutest"
	"github.com/scv-cli/scv/scv-bridge/internal/store"
	"github.com/scv-cli/scv/shared/chatlog"
	"github.com/scv-cli/scv/shared/fakeopenai"
)

var pngBytes = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 64)...)

// TestFeishuAnswerStreamsThroughACard: the answer is shown in a CardKit
// card while the model writes it, at most two updates a second (the fake
// refuses a third operation within a second), each update a prefix of the
// answer, and the card ends with the whole answer, out of streaming mode.
func TestFeishuAnswerStreamsThroughACard(t *testing.T) {
	t.Parallel()
	var chunks []string
	for i := range 30 {
		chunks = append(chunks, fmt.Sprintf("w%d ", i))
	}
	want := strings.Join(chunks, "")
	r := newRig(t, fakeopenai.Script(fakeopenai.Pace(50*time.Millisecond), fakeopenai.Text(chunks...)))
	r.fs.SetCardOpsPerSecond(3)
	r.start(t)
	r.fs.PushEvent(feishutest.MessageEvent("om_in1", "oc_owner", "p2p", "ou_owner", "text", map[string]string{"text": "count"}))
	waitFor(t, "the finished card", func() bool { return r.done(1) })
	m := r.fs.Messages()[0]
	card := r.fs.Card(cardID(m))
	if m.ReplyTo != "om_in1" || card == nil {
		t.Fatalf("the reply %+v is not a card answering om_in1", m)
	}
	if card.Text != strings.TrimSpace(want) && card.Text != want {
		t.Fatalf("the card shows %q, want %q", card.Text, want)
	}
	if len(card.Updates) < 2 {
		t.Fatalf("the card was updated %d times while the answer was written (1.5 s); want it streamed", len(card.Updates))
	}
	for _, u := range card.Updates {
		if !strings.HasPrefix(want, u) {
			t.Fatalf("an update %q is not a prefix of the answer", u)
		}
	}
	if n := r.fs.CardRateLimited(); n != 0 {
		t.Fatalf("%d card operations were over 3 a second", n)
	}
}

// TestFeishuStreamingFallsBackToPosts: when the card cannot be made, the
// answer arrives as a post.
func TestFeishuStreamingFallsBackToPosts(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeopenai.Script(fakeopenai.Text("Plain ", "answer.")))
	r.fs.SetFailCardCreate(true)
	r.start(t)
	r.fs.PushEvent(feishutest.MessageEvent("om_in1", "oc_owner", "p2p", "ou_owner", "text", map[string]string{"text": "hi"}))
	waitFor(t, "the reply", func() bool { return r.done(1) })
	m := r.fs.Messages()[0]
	if m.MsgType != "post" || m.ReplyTo != "om_in1" || !strings.Contains(m.Content, "Plain answer.") {
		t.Fatalf("the reply %+v, want a post answering om_in1", m)
	}
}

// mediaPath is where the core saves a resource (core.mediaPrefix).
func mediaPath(home, conv, messageID, key, name string) string {
	h := sha256.Sum256([]byte(messageID + "\x00" + key))
	return filepath.Join(home, "state", "media", "feishu", "work", conv, hex.EncodeToString(h[:4])+"-"+name)
}

// TestFeishuMediaDownloadedKeptAndSwept: an image and a file the owner
// sends are downloaded into the chat media (0600) and their paths given
// to the model; the model keeps the image with chat_keep; after keep_days
// (an injected clock) the sweep removes the file and not the kept image.
func TestFeishuMediaDownloadedKeptAndSwept(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	img := mediaPath(home, "oc_owner", "om_img", "img_v3_a", "image.png")
	r := newRig(t,
		fakeopenai.Script(fakeopenai.ToolCall("call_1", "chat_keep", fmt.Sprintf(`{"path":%q}`, img))),
		fakeopenai.Script(fakeopenai.Text("Kept it.")),
		fakeopenai.Script(fakeopenai.Text("Got the notes.")))
	r.rehome(t, home)
	r.opts.KeepDays = 30
	r.fs.AddResource("om_img", "img_v3_a", pngBytes)
	r.fs.AddResource("om_file", "file_v3_b", []byte("some notes\n"))
	stop := r.start(t)
	r.fs.PushEvent(feishutest.MessageEvent("om_img", "oc_owner", "p2p", "ou_owner", "image", map[string]string{"image_key": "img_v3_a"}))
	waitFor(t, "the first answer", func() bool { return r.done(1) })
	r.fs.PushEvent(feishutest.MessageEvent("om_file", "oc_owner", "p2p", "ou_owner", "file",
		map[string]string{"file_key": "file_v3_b", "file_name": "../notes.txt"}))
	waitFor(t, "the second answer", func() bool { return r.done(2) })
	reqs := r.model.Requests()
	if p := lastUser(reqs[0]); !strings.Contains(p, "[file image.png saved at "+img+"]") {
		t.Fatalf("the model got %q; want the image's path %s", p, img)
	}
	notes := mediaPath(home, "oc_owner", "om_file", "file_v3_b", "notes.txt")
	if p := lastUser(reqs[2]); !strings.Contains(p, "[file notes.txt saved at "+notes+"]") {
		t.Fatalf("the model got %q; want the file's path %s", p, notes)
	}
	fi, err := os.Stat(notes)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the saved file: %v, %v; want mode 0600", fi, err)
	}
	if data, _ := os.ReadFile(notes); string(data) != "some notes\n" {
		t.Fatalf("the saved file holds %q", data)
	}
	kept := filepath.Join(r.opts.Archive, "feishu", "work", "oc_owner", "files", filepath.Base(img))
	if _, err := os.Stat(kept); err != nil {
		t.Fatalf("the image was not kept: %v", err)
	}
	if err := stop(); err != nil && ctxErr(err) {
		t.Fatal(err)
	}

	// keep_days later: the sweep at start removes the file, not the kept image.
	r.opts.Now = func() time.Time { return time.Now().Add(31 * 24 * time.Hour) }
	r.start(t)
	waitFor(t, "the sweep", func() bool { _, err := os.Stat(notes); return os.IsNotExist(err) })
	if _, err := os.Stat(kept); err != nil {
		t.Fatalf("the sweep removed a kept file: %v", err)
	}
}

// TestFeishuAttachedFilesDelivered: files the model attaches with
// chat_attach are uploaded (the image with the image endpoint, the PDF as
// a file) and sent after the answer, whose text carries the caption; their
// copies leave the outbox and the chat log records them as sent.
func TestFeishuAttachedFilesDelivered(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	chart, report := filepath.Join(work, "chart.png"), filepath.Join(work, "report.pdf")
	if err := os.WriteFile(chart, pngBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(report, []byte("%PDF-1.4 a report"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRig(t,
		fakeopenai.Script(fakeopenai.ToolCall("call_1", "chat_attach", fmt.Sprintf(`{"path":%q,"caption":"the chart"}`, chart))),
		fakeopenai.Script(fakeopenai.ToolCall("call_2", "chat_attach", fmt.Sprintf(`{"path":%q}`, report))),
		fakeopenai.Script(fakeopenai.Text("Here they are.")))
	r.opts.Cwd = work
	r.start(t)
	r.fs.PushEvent(feishutest.MessageEvent("om_in1", "oc_owner", "p2p", "ou_owner", "text", map[string]string{"text": "send them"}))
	waitFor(t, "the answer and two files", func() bool { return r.done(3) })
	msgs := r.fs.Messages()
	if got := r.shown(msgs[0]); !strings.Contains(got, "Here they are.") || !strings.Contains(got, "chart.png: the chart") {
		t.Fatalf("the answer shows %q; want the text and the caption", got)
	}
	if msgs[1].MsgType != "image" || msgs[2].MsgType != "file" || msgs[1].ReceiveID != "oc_owner" {
		t.Fatalf("the files were sent as %+v and %+v; want an image, then a file, in the chat", msgs[1], msgs[2])
	}
	ups := r.fs.Uploads()
	if len(ups) != 2 || ups[0].Kind != "message" || !bytes.Equal(ups[0].Data, pngBytes) ||
		ups[1].Kind != "pdf" || ups[1].Name != "report.pdf" {
		t.Fatalf("uploads %+v", ups)
	}
	waitFor(t, "the outbox emptied", func() bool {
		ents, _ := os.ReadDir(chatlog.OutboxDir(r.opts.Home))
		return len(ents) == 0
	})
	log := readLog(t, filepath.Join(r.opts.Archive, "feishu", "work", "oc_owner"))
	if !strings.Contains(log, `"path":"`+chart+`","state":"sent"`) {
		t.Fatalf("the chat log does not record the chart as sent:\n%s", log)
	}
}

func lastUser(req fakeopenai.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return req.Messages[i].Content
		}
	}
	return ""
}

func ctxErr(err error) bool { return err != nil && err != context.Canceled }

// readLog returns every episode file of a chat log, joined.
func readLog(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, chatlog.Ext) {
			data, _ := os.ReadFile(p)
			b.Write(data)
		}
		return nil
	})
	return b.String()
}

// TestFeishuStopMidTurn: /stop during a streamed answer cancels the turn
// in the real server, finishes the card with what it showed and a note,
// and answers "Stopped." at once; the model is not asked again.
func TestFeishuStopMidTurn(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeopenai.Script(fakeopenai.Text("Partial answer"), fakeopenai.Hang()))
	r.start(t)
	r.fs.PushEvent(feishutest.MessageEvent("om_in1", "oc_owner", "p2p", "ou_owner", "text", map[string]string{"text": "long job"}))
	waitFor(t, "the streaming card", func() bool {
		msgs := r.fs.Messages()
		return len(msgs) == 1 && r.shown(msgs[0]) == "Partial answer"
	})
	r.fs.PushEvent(feishutest.MessageEvent("om_stop", "oc_owner", "p2p", "ou_owner", "text", map[string]string{"text": "/stop"}))
	waitFor(t, "the stop", func() bool { return r.done(2) })
	msgs := r.fs.Messages()
	if got := r.shown(msgs[0]); got != "Partial answer\n\n(Stopped.)" {
		t.Fatalf("the card ends with %q", got)
	}
	if msgs[1].ReplyTo != "om_stop" || !strings.Contains(msgs[1].Content, "Stopped.") {
		t.Fatalf("the answer to /stop = %+v", msgs[1])
	}
	if n := len(r.model.Requests()); n != 1 {
		t.Fatalf("%d model requests, want 1", n)
	}
}

// TestFeishuCardOfALostStreamFinishedAfterRestart: the bridge stopped
// while an answer streamed into a card, with the final text queued; the
// next run finishes that card with the text instead of leaving it
// "generating", and sends nothing twice.
func TestFeishuCardOfALostStreamFinishedAfterRestart(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	fc, err := feishu.New(feishu.Options{AppID: feishutest.AppID, AppSecret: feishutest.AppSecret, BaseURL: r.fs.URL,
		HTTPClient: r.fs.Client()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := fc.StartStream(t.Context(), feishu.Destination{To: feishu.Recipient{Type: feishu.ByChatID, ID: "oc_owner"}, ReplyTo: "om_in1"}, "s1")
	if err != nil || s.Fallback() {
		t.Fatalf("a card: %v", err)
	}
	if err := s.Update(t.Context(), "Half an"); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(StorePath(r.opts.Home, "feishu", "work"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(core.Reply{Conversation: "oc_owner", ReplyTo: "om_in1", Text: "Half an answer, whole now.", Stream: s.CardID()})
	if _, err := st.Enqueue("oc_owner", core.KindText, payload); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	r.start(t)
	waitFor(t, "the finished card", func() bool { return r.done(1) })
	time.Sleep(200 * time.Millisecond)
	if msgs := r.fs.Messages(); len(msgs) != 1 || r.shown(msgs[0]) != "Half an answer, whole now." {
		t.Fatalf("messages %+v, the card shows %q", msgs, r.shown(msgs[0]))
	}
}

// TestFeishuReplyQuotesTheMessage: a reply carries only the quoted
// message's id; its text is fetched and given to the model (and the chat
// log) as the quote.
func TestFeishuReplyQuotesTheMessage(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeopenai.Script(fakeopenai.Text("Blue it is.")))
	r.fs.AddMessage("om_q", "text", map[string]string{"text": "the blue door"})
	r.start(t)
	var ev map[string]any
	_ = json.Unmarshal(feishutest.MessageEvent("om_r", "oc_owner", "p2p", "ou_owner", "text", map[string]string{"text": "what about this?"}), &ev)
	ev["event"].(map[string]any)["message"].(map[string]any)["parent_id"] = "om_q"
	raw, _ := json.Marshal(ev)
	r.fs.PushEvent(raw)
	waitFor(t, "the answer", func() bool { return r.done(1) })
	if p := lastUser(r.model.Requests()[0]); p != "> the blue door\nwhat about this?" {
		t.Fatalf("the model got %q", p)
	}
	if log := readLog(t, filepath.Join(r.opts.Archive, "feishu", "work", "oc_owner")); !strings.Contains(log, `"quote":"the blue door"`) {
		t.Fatalf("the chat log lacks the quote:\n%s", log)
	}
}
