package servertest_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	"github.com/scv-cli/scv/shared/chatlog"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// startChannel starts a session of protocol version v with channel ch and
// auto_approve, as a chat bridge does for an owner.
func startChannel(t *testing.T, s *st.Server, v int, ch *protocol.Channel) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, "out", "chart.png"), "PNGDATA")
	c := s.Client
	c.Send(&protocol.SessionStart{RequestID: c.ID(), Cwd: ws, AutoApprove: true, Channel: ch})
	sid := st.Expect[*protocol.SessionStarted](c).SessionID
	st.Expect[*protocol.QueueSnapshot](c)
	return sid
}

// TestChatToolsEndToEnd: an owner's direct chat (channel.log, v4) gets the
// three chat tools and the Chat channel prompt section; chat_history reads
// the log the server finds in the archive, and chat_attach puts a copy and
// its delivery record in the outbox.
func TestChatToolsEndToEnd(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	logDir := filepath.Join(s.Home, "archive", "feishu", "default", "oc_1")
	w, err := chatlog.OpenWriter(logDir, chatlog.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Append(chatlog.Message{Time: time.Now().Add(-time.Hour), Who: chatlog.Owner, Text: "paint the blue door"})
	_ = w.Close()

	s.Client.Init(4)
	sid := startChannel(t, s, 4, &protocol.Channel{Platform: "feishu", Account: "default", Conversation: "oc_1", Log: true})
	f.Enqueue(
		fo.Script(fo.ToolCall("call_1", "chat_history", `{"action":"search","query":"blue door"}`)),
		fo.Script(fo.ToolCall("call_2", "chat_attach", `{"path":"out/chart.png"}`)),
		fo.Script(fo.Text("Sent.")),
	)
	c := s.Client
	c.Turn(sid, "send me the chart and remind me about the door")
	evs, _ := st.Until[*protocol.TurnCompleted](c)
	var done []*protocol.ToolCompleted
	for _, e := range evs {
		switch e := e.(type) {
		case *protocol.ApprovalRequested:
			t.Fatalf("an auto_approve session asked: %+v", e)
		case *protocol.ToolCompleted:
			done = append(done, e)
		}
	}
	if len(done) != 2 || !done[0].Success || !strings.Contains(done[0].Output, "paint the blue door") {
		t.Fatalf("chat_history: %s", st.JSON(done))
	}
	if !done[1].Success || !strings.Contains(done[1].Output, filepath.Join(s.Home, "state", "media", "outbox")) {
		t.Fatalf("chat_attach: %s", st.JSON(done[1]))
	}
	if recs, _ := filepath.Glob(filepath.Join(s.Home, "state", "media", "outbox", "*.json")); len(recs) != 1 {
		t.Errorf("outbox records: %v", recs)
	}
	req := f.Requests()[0]
	if got := toolNames(req); !slices.Contains(got, "chat_attach") || !slices.Contains(got, "chat_history") || !slices.Contains(got, "chat_keep") {
		t.Errorf("tools %v", got)
	}
	if !strings.Contains(req.Messages[0].Content, "# Chat channel") {
		t.Error("the system prompt has no Chat channel section")
	}
}

func toolNames(req fo.Request) []string {
	var out []string
	for _, tl := range req.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// TestChatToolsOffered: chat_attach needs a channel; chat_history and
// chat_keep need its log, a v4 member a v3 client cannot set; a session
// without a channel has none, and a log named with a path is refused.
func TestChatToolsOffered(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		v    int
		ch   *protocol.Channel
		want string
	}{
		{"no channel", 4, nil, ""},
		{"channel without log", 4, &protocol.Channel{Platform: "wechat", Account: "default", Conversation: "p1"}, "chat_attach"},
		{"v3 client naming a log", 3, &protocol.Channel{Platform: "wechat", Account: "default", Conversation: "p1", Log: true}, "chat_attach"},
		{"owner's direct chat", 4, &protocol.Channel{Platform: "wechat", Account: "default", Conversation: "p1", Log: true}, "chat_attach,chat_history,chat_keep"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, s := fake(t, "", st.Options{})
			s.Client.Init(tc.v)
			sid := startChannel(t, s, tc.v, tc.ch)
			f.Enqueue(fo.Script(fo.Text("Hi.")))
			s.Client.Turn(sid, "hello")
			st.Until[*protocol.TurnCompleted](s.Client)
			var chat []string
			for _, n := range toolNames(f.Requests()[0]) {
				if strings.HasPrefix(n, "chat_") {
					chat = append(chat, n)
				}
			}
			slices.Sort(chat)
			if got := strings.Join(chat, ","); got != tc.want {
				t.Errorf("chat tools %q, want %q", got, tc.want)
			}
		})
	}
	_, s := fake(t, "", st.Options{})
	c := s.Client
	c.Init(4)
	for _, ch := range []protocol.Channel{
		{Platform: "feishu", Account: "default", Conversation: "../../etc", Log: true},
		{Platform: "feishu", Account: "", Conversation: "oc_1", Log: true},
		{Platform: "fei/shu", Account: "default", Conversation: "oc_1", Log: true},
	} {
		c.Send(&protocol.SessionStart{RequestID: c.ID(), Cwd: t.TempDir(), Channel: &ch})
		e := c.ExpectError(protocol.ErrInvalidRequest)
		if !strings.Contains(e.Message, "channel.") {
			t.Errorf("%+v: %s", ch, e.Message)
		}
	}
}
