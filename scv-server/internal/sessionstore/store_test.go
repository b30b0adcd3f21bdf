package sessionstore_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/scv-server/internal/sessionstore"
	"github.com/scv-cli/scv/shared/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const ws = "/home/ana/project"

func create(t *testing.T, st *sessionstore.Store, cwd string) *sessionstore.Log {
	t.Helper()
	l, err := st.Create(sessionstore.Meta{ID: uuid.NewString(), Cwd: cwd, Model: "fake-model"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func id(l *sessionstore.Log) string { return filepath.Base(filepath.Dir(l.Path())) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func user(s string) provider.Message { return provider.Message{Role: provider.RoleUser, Content: s} }
func assistant(s string, calls ...provider.ToolCall) provider.Message {
	return provider.Message{Role: provider.RoleAssistant, Content: s, ToolCalls: calls}
}
func toolResult(callID, s string) provider.Message {
	return provider.Message{Role: provider.RoleTool, ToolCallID: callID, Content: s}
}
func call(id, name, args string) provider.ToolCall {
	return provider.ToolCall{ID: id, Name: name, Arguments: args}
}

// turn records a whole turn: prompt, then msgs (tool results of failed
// calls start with "error: "), then its end.
func turn(t *testing.T, l *sessionstore.Log, turnID, prompt string, end sessionstore.End, msgs ...provider.Message) {
	t.Helper()
	must(t, l.TurnStarted(turnID, "r-"+turnID, nil, prompt))
	must(t, l.Message(turnID, user(prompt), false))
	for _, m := range msgs {
		must(t, l.Message(turnID, m, m.Role == provider.RoleTool && strings.HasPrefix(m.Content, "error: ")))
	}
	must(t, l.TurnEnded(turnID, end))
}

func completed(in, out int64) sessionstore.End {
	return sessionstore.End{Outcome: sessionstore.OutcomeCompleted, Steps: 1, Usage: &protocol.Usage{InputTokens: in, OutputTokens: out}}
}

func reopen(t *testing.T, st *sessionstore.Store, sid string) (*sessionstore.Log, *sessionstore.Session) {
	t.Helper()
	l, s, err := st.Open(sid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, s
}

func items(t *testing.T, got []protocol.ReplayItem) string {
	t.Helper()
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	st := sessionstore.New(t.TempDir())
	l := create(t, st, ws)
	sid := id(l)
	turn(t, l, "t1", "Fix the\nfailing test.", completed(100, 10),
		assistant("", call("call_1", "bash", `{"command":"go test ./..."}`)),
		toolResult("call_1", "error: exit 1"),
		assistant("The test expects a trailing newline."))
	turn(t, l, "t2", "Thanks", completed(50, 5), assistant("You're welcome."))
	must(t, l.Close())

	l2, s := reopen(t, st, sid)
	wantHistory := []provider.Message{
		user("Fix the\nfailing test."),
		assistant("", call("call_1", "bash", `{"command":"go test ./..."}`)),
		toolResult("call_1", "error: exit 1"),
		assistant("The test expects a trailing newline."),
		user("Thanks"),
		assistant("You're welcome."),
	}
	if !reflect.DeepEqual(s.History, wantHistory) {
		t.Fatalf("history = %+v", s.History)
	}
	if s.Usage != (protocol.Usage{InputTokens: 150, OutputTokens: 15}) || s.Turns != 2 || s.Title != "Fix the failing test." {
		t.Fatalf("usage %+v turns %d title %q", s.Usage, s.Turns, s.Title)
	}
	if s.ID != sid || s.Cwd != ws || s.Model != "fake-model" || s.Created.IsZero() || s.Updated.IsZero() || s.Bytes == 0 || s.Interrupted != "" {
		t.Fatalf("session = %+v", s.Meta)
	}
	want := `[{"kind":"user","turn_id":"t1","text":"Fix the\nfailing test."},` +
		`{"kind":"tool","turn_id":"t1","text":"exit 1","call_id":"call_1","name":"bash","arguments":{"command":"go test ./..."},"success":false},` +
		`{"kind":"assistant","turn_id":"t1","text":"The test expects a trailing newline."},` +
		`{"kind":"user","turn_id":"t2","text":"Thanks"},{"kind":"assistant","turn_id":"t2","text":"You're welcome."}]`
	if got := items(t, s.Replay); got != want {
		t.Fatalf("replay =\n%s\nwant\n%s", got, want)
	}

	// Resumed, it goes on where it stopped.
	must(t, l2.Resume("other-model"))
	turn(t, l2, "t3", "More", completed(1, 1), assistant("Sure."))
	must(t, l2.Close())
	s3, err := st.Load(sid)
	must(t, err)
	if len(s3.History) != 8 || s3.Turns != 3 || s3.Usage.InputTokens != 151 {
		t.Fatalf("after resume: %d messages, %d turns, %+v", len(s3.History), s3.Turns, s3.Usage)
	}
}

func TestCancelledAndFailedTurnsHaveNotices(t *testing.T) {
	t.Parallel()
	st := sessionstore.New(t.TempDir())
	l := create(t, st, ws)
	turn(t, l, "t1", "a", sessionstore.End{Outcome: sessionstore.OutcomeCancelled}, assistant("", call("c1", "read", `{`)), toolResult("c1", "not run: the turn was stopped before this call finished"))
	turn(t, l, "t2", "b", sessionstore.End{Outcome: sessionstore.OutcomeFailed, Code: "provider_error", Message: "boom"})
	must(t, l.Close())
	s, err := st.Load(id(l))
	must(t, err)
	got := items(t, s.Replay)
	for _, want := range []string{
		`"arguments":"{"`, // invalid JSON arguments come back as a string
		`{"kind":"notice","turn_id":"t1","text":"The turn was cancelled."}`,
		`{"kind":"notice","turn_id":"t2","text":"The turn failed (provider_error): boom"}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("replay %s lacks %s", got, want)
		}
	}
}

func TestTornLastLineIsIgnoredAndCutOff(t *testing.T) {
	t.Parallel()
	st := sessionstore.New(t.TempDir())
	l := create(t, st, ws)
	sid := id(l)
	turn(t, l, "t1", "hello", completed(1, 1), assistant("hi"))
	must(t, l.Close())
	path := st.LogPath(sid)
	good, err := os.ReadFile(path)
	must(t, err)
	torn := `{"t":"msg","turn":"t2","msg":{"role":"user","content":"half a rec`
	must(t, os.WriteFile(path, append(append([]byte(nil), good...), torn...), 0o600))

	l2, s := reopen(t, st, sid)
	if len(s.History) != 2 || s.Turns != 1 {
		t.Fatalf("history %+v, turns %d", s.History, s.Turns)
	}
	must(t, l2.Resume("fake-model"))
	turn(t, l2, "t2", "again", completed(1, 1), assistant("hi again"))
	must(t, l2.Close())
	data, err := os.ReadFile(path)
	must(t, err)
	if strings.Contains(string(data), "half a rec") || !strings.HasPrefix(string(data), string(good)) {
		t.Fatalf("the torn line is still in the log:\n%s", data)
	}
	s2, err := st.Load(sid)
	must(t, err)
	if len(s2.History) != 4 || s2.Turns != 2 {
		t.Fatalf("after appending: %+v", s2.History)
	}
}

func TestCorruptMiddleLineIsRefused(t *testing.T) {
	t.Parallel()
	st := sessionstore.New(t.TempDir())
	l := create(t, st, ws)
	sid := id(l)
	turn(t, l, "t1", "hello", completed(1, 1), assistant("hi"))
	must(t, l.Close())
	path := st.LogPath(sid)
	data, err := os.ReadFile(path)
	must(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	lines[2] = "{not json\n" // line 3
	must(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600))

	_, _, err = st.Open(sid)
	var ce *sessionstore.CorruptError
	if !errors.As(err, &ce) || ce.Path != path || ce.Line != 3 || !strings.Contains(err.Error(), path+":3: ") {
		t.Fatalf("Open = %v, want a corrupt error at %s:3", err, path)
	}
	if _, err := st.Load(sid); !errors.As(err, &ce) {
		t.Fatalf("Load = %v", err)
	}
	// The refused log is left exactly as it was, and can be opened again
	// (Open released its lock).
	after, _ := os.ReadFile(path)
	if string(after) != strings.Join(lines, "") {
		t.Fatal("a refused log was modified")
	}
	if _, _, err := st.Open(sid); !errors.As(err, &ce) {
		t.Fatalf("second Open = %v", err)
	}

	// A first line that is not the meta record is corrupt too.
	must(t, os.WriteFile(path, []byte(`{"t":"turn","turn":"t1"}`+"\n"), 0o600))
	if _, _, err := st.Open(sid); !errors.As(err, &ce) || ce.Line != 1 {
		t.Fatalf("Open = %v, want line 1", err)
	}
	// So is a log with no complete line at all.
	must(t, os.WriteFile(path, []byte(`{"t":"me`), 0o600))
	if _, _, err := st.Open(sid); !errors.As(err, &ce) || ce.Line != 1 {
		t.Fatalf("Open = %v, want line 1", err)
	}
}

func TestInterruptedTurnGetsSyntheticResults(t *testing.T) {
	t.Parallel()
	st := sessionstore.New(t.TempDir())
	l := create(t, st, ws)
	sid := id(l)
	turn(t, l, "t1", "first", completed(10, 1), assistant("done"))
	// The second turn stops (a crash) after the first of two calls ran.
	must(t, l.TurnStarted("t2", "r2", nil, "second"))
	must(t, l.Message("t2", user("second"), false))
	must(t, l.Message("t2", assistant("Running both.", call("a", "bash", `{"command":"make"}`), call("b", "write", `{"path":"x"}`)), false))
	must(t, l.Message("t2", toolResult("a", "ok"), false))
	must(t, l.Close()) // the process dies: no end record

	l2, s := reopen(t, st, sid)
	if s.Interrupted != "t2" {
		t.Fatalf("Interrupted = %q", s.Interrupted)
	}
	last := s.History[len(s.History)-1]
	if !reflect.DeepEqual(last, toolResult("b", sessionstore.InterruptedResult)) || len(s.History) != 6 {
		t.Fatalf("history = %+v", s.History)
	}
	want := `[{"kind":"user","turn_id":"t1","text":"first"},{"kind":"assistant","turn_id":"t1","text":"done"},` +
		`{"kind":"user","turn_id":"t2","text":"second","interrupted":true},` +
		`{"kind":"assistant","turn_id":"t2","text":"Running both.","interrupted":true},` +
		`{"kind":"tool","turn_id":"t2","text":"ok","call_id":"a","name":"bash","arguments":{"command":"make"},"success":true,"interrupted":true},` +
		`{"kind":"tool","turn_id":"t2","text":"interrupted; it may or may not have run","call_id":"b","name":"write","arguments":{"path":"x"},"interrupted":true},` +
		`{"kind":"notice","turn_id":"t2","text":"` + sessionstore.NoticeInterrupted + `","interrupted":true}]`
	if got := items(t, s.Replay); got != want {
		t.Fatalf("replay =\n%s\nwant\n%s", got, want)
	}
	if s.Usage.InputTokens != 10 || s.Turns != 2 {
		t.Fatalf("usage %+v turns %d", s.Usage, s.Turns)
	}

	// Resume makes the repair durable: a later load finds the turn ended.
	must(t, l2.Resume("fake-model"))
	turn(t, l2, "t3", "third", completed(1, 1), assistant("ok"))
	must(t, l2.Close())
	s2, err := st.Load(sid)
	must(t, err)
	if s2.Interrupted != "" || len(s2.History) != 8 || s2.Turns != 3 {
		t.Fatalf("after resume: interrupted %q, history %+v", s2.Interrupted, s2.History)
	}
	if got := items(t, s2.Replay); !strings.HasPrefix(got, want[:len(want)-1]) {
		t.Fatalf("replay after resume =\n%s", got)
	}
	// An interrupted turn mid-log (a server stopped, the next one went on
	// without repairing) is handled the same way.
	l3 := create(t, st, ws)
	must(t, l3.TurnStarted("x1", "r", nil, "p"))
	must(t, l3.Message("x1", user("p"), false))
	must(t, l3.Message("x1", assistant("", call("c", "bash", `{}`)), false))
	turn(t, l3, "x2", "q", completed(1, 1), assistant("fine"))
	must(t, l3.Close())
	s3, err := st.Load(id(l3))
	must(t, err)
	if !reflect.DeepEqual(s3.History[2], toolResult("c", sessionstore.InterruptedResult)) || !reflect.DeepEqual(s3.History[3], user("q")) || s3.Interrupted != "" {
		t.Fatalf("history = %+v", s3.History)
	}
}

func TestClear(t *testing.T) {
	t.Parallel()
	st := sessionstore.New(t.TempDir())
	l := create(t, st, ws)
	turn(t, l, "t1", "first prompt", completed(10, 1), assistant("one"))
	must(t, l.Cleared())
	turn(t, l, "t2", "after clear", completed(3, 2), assistant("two"))
	must(t, l.Close())
	s, err := st.Load(id(l))
	must(t, err)
	if !reflect.DeepEqual(s.History, []provider.Message{user("after clear"), assistant("two")}) {
		t.Fatalf("history = %+v", s.History)
	}
	if s.Usage != (protocol.Usage{InputTokens: 3, OutputTokens: 2}) || s.Turns != 2 || s.Title != "first prompt" {
		t.Fatalf("usage %+v turns %d title %q", s.Usage, s.Turns, s.Title)
	}
	want := `[{"kind":"notice","text":"` + sessionstore.NoticeCleared + `"},{"kind":"user","turn_id":"t2","text":"after clear"},{"kind":"assistant","turn_id":"t2","text":"two"}]`
	if got := items(t, s.Replay); got != want {
		t.Fatalf("replay = %s", got)
	}
}

func TestCompactionReplacesHistory(t *testing.T) {
	t.Parallel()
	st := sessionstore.New(t.TempDir())
	l := create(t, st, ws)
	turn(t, l, "t1", "one", completed(1, 1), assistant("1"))
	turn(t, l, "t2", "two", completed(1, 1), assistant("2"))
	must(t, l.Compacted([]provider.Message{user("Summary: one, two.")}, 3))
	turn(t, l, "t3", "three", completed(1, 1), assistant("3"))
	// A compaction inside a turn keeps the turn's recorded messages.
	must(t, l.TurnStarted("t4", "r4", nil, "four"))
	must(t, l.Message("t4", user("four"), false))
	must(t, l.Message("t4", assistant("", call("c", "read", `{"path":"a"}`)), false))
	must(t, l.Message("t4", toolResult("c", "A"), false))
	must(t, l.Compacted([]provider.Message{user("Summary: one to three.")}, 4))
	must(t, l.Message("t4", assistant("4"), false))
	must(t, l.TurnEnded("t4", completed(1, 1)))
	// A trim drops the oldest messages.
	must(t, l.Replaced(0, 1, nil))
	must(t, l.Close())

	s, err := st.Load(id(l))
	must(t, err)
	want := []provider.Message{user("four"), assistant("", call("c", "read", `{"path":"a"}`)), toolResult("c", "A"), assistant("4")}
	if !reflect.DeepEqual(s.History, want) {
		t.Fatalf("history = %+v", s.History)
	}
	got := items(t, s.Replay)
	// The transcript keeps every turn, with a notice where compaction
	// happened.
	for _, w := range []string{`"text":"one"`, `"text":"three"`, `{"kind":"notice","text":"The context was compacted: 3 earlier messages were replaced by a summary."}`,
		`{"kind":"notice","turn_id":"t4","text":"The context was compacted: 4 earlier`, `"text":"1 earlier messages were dropped`} {
		if !strings.Contains(got, w) {
			t.Errorf("replay %s lacks %s", got, w)
		}
	}
	if s.Usage.InputTokens != 4 || s.Turns != 4 {
		t.Fatalf("usage %+v turns %d", s.Usage, s.Turns)
	}

	// A compaction that does not fit the history is a corrupt log.
	l2 := create(t, st, ws)
	turn(t, l2, "t1", "one", completed(1, 1))
	must(t, l2.Compacted(nil, 5))
	must(t, l2.Close())
	var ce *sessionstore.CorruptError
	if _, err := st.Load(id(l2)); !errors.As(err, &ce) || ce.Line != 5 {
		t.Fatalf("Load = %v", err)
	}
}

func TestListNewestFirstForTheWorkspace(t *testing.T) {
	st := sessionstore.New(t.TempDir())
	if got, err := st.List(ws, 20); err != nil || len(got) != 0 {
		t.Fatalf("List of an empty store = %v, %v", got, err)
	}
	base := time.Now().Add(-time.Hour)
	var ids []string
	for i, prompt := range []string{"oldest", "middle " + strings.Repeat("word ", 40), "newest"} {
		l := create(t, st, ws)
		turn(t, l, "t", prompt, completed(1, 1), assistant("ok"))
		must(t, l.Close())
		mt := base.Add(time.Duration(i) * time.Minute)
		must(t, os.Chtimes(l.Path(), mt, mt))
		ids = append(ids, id(l))
	}
	other := create(t, st, "/elsewhere")
	turn(t, other, "t", "elsewhere", completed(1, 1))
	empty := create(t, st, ws) // no turn: never listed
	_ = empty

	got, err := st.List(ws, 20)
	must(t, err)
	if len(got) != 3 || got[0].SessionID != ids[2] || got[1].SessionID != ids[1] || got[2].SessionID != ids[0] {
		t.Fatalf("List = %+v", got)
	}
	if got[0].Title != "newest" || got[0].Turns != 1 || got[0].Cwd != ws || got[0].Bytes == 0 {
		t.Fatalf("summary = %+v", got[0])
	}
	if title := got[1].Title; len([]rune(title)) != sessionstore.TitleRunes || !strings.HasSuffix(title, "…") {
		t.Fatalf("long title = %q", title)
	}
	if _, err := time.Parse(time.RFC3339, got[0].UpdatedAt); err != nil || got[0].UpdatedAt != base.Add(2*time.Minute).UTC().Format(time.RFC3339) {
		t.Fatalf("updated_at = %q (%v)", got[0].UpdatedAt, err)
	}
	if _, err := time.Parse(time.RFC3339, got[0].CreatedAt); err != nil {
		t.Fatalf("created_at = %q", got[0].CreatedAt)
	}
	if got, _ := st.List(ws, 2); len(got) != 2 || got[0].SessionID != ids[2] {
		t.Fatalf("List limit 2 = %+v", got)
	}
	if got, _ := st.List("/elsewhere", 0); len(got) != 1 || got[0].Title != "elsewhere" {
		t.Fatalf("List of the other workspace = %+v", got)
	}

	// Without its summary, a session is listed from its log.
	must(t, os.Remove(filepath.Join(st.SessionDir(ids[1]), sessionstore.SummaryName)))
	got, _ = st.List(ws, 20)
	if len(got) != 3 || got[1].SessionID != ids[1] || !strings.HasPrefix(got[1].Title, "middle word") {
		t.Fatalf("List without a summary = %+v", got)
	}
	// Stray entries are skipped.
	must(t, os.WriteFile(filepath.Join(st.Dir(), "stray"), nil, 0o600))
	must(t, os.Mkdir(filepath.Join(st.Dir(), uuid.NewString()), 0o700))
	if got, _ := st.List(ws, 20); len(got) != 3 {
		t.Fatalf("List with strays = %+v", got)
	}
}

func TestFileModes(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	st := sessionstore.New(state)
	l := create(t, st, ws)
	turn(t, l, "t", "p", completed(1, 1))
	for path, want := range map[string]os.FileMode{
		st.Dir():             0o700 | os.ModeDir,
		st.SessionDir(id(l)): 0o700 | os.ModeDir,
		l.Path():             0o600,
		filepath.Join(st.SessionDir(id(l)), sessionstore.SummaryName): 0o600,
	} {
		fi, err := os.Stat(path)
		must(t, err)
		if fi.Mode() != want {
			t.Errorf("%s has mode %v, want %v", path, fi.Mode(), want)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	st := sessionstore.New(t.TempDir())
	if _, _, err := st.Open(uuid.NewString()); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	for _, bad := range []string{"", "../../etc", "ABCDEF00-0000-0000-0000-000000000000", "{" + uuid.NewString() + "}"} {
		if _, _, err := st.Open(bad); err == nil || errors.Is(err, sessionstore.ErrNotFound) {
			t.Errorf("Open(%q) = %v, want a refusal of the id", bad, err)
		}
	}
	l := create(t, st, ws)
	turn(t, l, "t", "p", completed(1, 1))
	if runtime.GOOS != "windows" {
		if _, _, err := st.Open(id(l)); !errors.Is(err, sessionstore.ErrBusy) {
			t.Fatalf("Open of a log open elsewhere = %v, want ErrBusy", err)
		}
	}
	must(t, l.Close())
	l2, _ := reopen(t, st, id(l))
	must(t, l2.Close())
}

func TestAbandonedSessionLeavesNothing(t *testing.T) {
	t.Parallel()
	st := sessionstore.New(t.TempDir())
	l := create(t, st, ws)
	must(t, l.Close())
	if _, err := os.Stat(st.SessionDir(id(l))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the directory of a session without turns is still there: %v", err)
	}
}

func TestTitle(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"  fix\tthe\n\ntest ":      "fix the test",
		strings.Repeat("é", 80):    strings.Repeat("é", 80),
		strings.Repeat("é", 81):    strings.Repeat("é", 79) + "…",
		strings.Repeat("abc ", 30): strings.Repeat("abc ", 19) + "abc…",
	} {
		if got := sessionstore.Title(in); got != want {
			t.Errorf("Title(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLargeLogs decodes a log big enough to be split among goroutines: the
// records come back in order and a corrupt line is still named exactly.
func TestLargeLogs(t *testing.T) {
	t.Parallel()
	st := sessionstore.New(t.TempDir())
	sid := writeTurns(t, st, 700) // about 2 MiB
	s, err := st.Load(sid)
	must(t, err)
	if len(s.History) != 2800 || s.Turns != 700 || s.Usage.InputTokens != 700_000 {
		t.Fatalf("%d messages, %d turns, %+v", len(s.History), s.Turns, s.Usage)
	}
	for i := range 700 {
		if want := fmt.Sprintf("Step %d:", i); !strings.HasPrefix(s.History[4*i].Content, want) {
			t.Fatalf("message %d = %.20q, want %q", 4*i, s.History[4*i].Content, want)
		}
	}
	path := st.LogPath(sid)
	data, err := os.ReadFile(path)
	must(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	lines[3500] = `{"t":"msg","turn":"x","msg":{"role":"user","content":"split` + "\n"
	must(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600))
	var ce *sessionstore.CorruptError
	if _, err := st.Load(sid); !errors.As(err, &ce) || ce.Line != 3501 {
		t.Fatalf("Load = %v, want a corrupt error at line 3501", err)
	}
	lines[3500] = `{"t":"clear"} {"t":"clear"}` + "\n"
	must(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600))
	if _, err := st.Load(sid); !errors.As(err, &ce) || ce.Line != 3501 {
		t.Fatalf("Load = %v, want a corrupt error at line 3501", err)
	}
}

func TestRules(t *testing.T) {
	t.Parallel()
	st := sessionstore.New(t.TempDir())
	l := create(t, st, ws)
	goTest := protocol.Rule{Tool: "bash", Key: "bash:go test", Description: "go test"}
	src := protocol.Rule{Tool: "write", Key: "fs:src/", Description: "src"}
	must(t, l.RuleGranted(goTest))
	must(t, l.Cleared())
	must(t, l.RuleGranted(src))
	turn(t, l, "t1", "p", completed(1, 1), assistant("a"))
	must(t, l.RuleGranted(goTest))
	again := src
	again.Tool = "edit" // the same key granted again replaces it in place
	must(t, l.RuleGranted(again))
	must(t, l.Close())
	s, err := st.Load(id(l))
	must(t, err)
	if !reflect.DeepEqual(s.Rules, []protocol.Rule{again, goTest}) {
		t.Fatalf("rules = %+v", s.Rules)
	}
	if len(s.History) != 2 {
		t.Fatalf("a rule record changed the history: %+v", s.History)
	}
}

func TestQueueRecords(t *testing.T) {
	t.Parallel()
	st := sessionstore.New(t.TempDir())
	l := create(t, st, ws)
	a := sessionstore.Queued{QueueID: "q-a", Revision: 1, Prompt: "a", Submitter: "scv-tui", Request: "r1"}
	b := sessionstore.Queued{QueueID: "q-b", Revision: 1, Prompt: "b", Request: "r2"}
	c := sessionstore.Queued{QueueID: "q-c", Revision: 1, Prompt: "c", Request: "r3"}
	// A log without a turn is not kept (nothing to resume), and prompts
	// are queued only behind a turn.
	turn(t, l, "t1", "p", completed(1, 1), assistant("x"))
	must(t, l.QueueAdded(a))
	must(t, l.QueueAdded(b))
	must(t, l.QueueAdded(c))
	must(t, l.QueueUpdated("q-b", 2, "b2"))
	must(t, l.QueueMoved("q-c", 2, "q-a")) // c a b
	must(t, l.QueueMoved("q-a", 2, ""))    // c b a
	must(t, l.QueueRemoved("q-c"))         // c started
	must(t, l.QueueUpdated("q-gone", 5, "ignored"))
	must(t, l.Close())
	s, err := st.Load(id(l))
	must(t, err)
	b.Revision, b.Prompt = 2, "b2"
	a.Revision = 2
	if !reflect.DeepEqual(s.Queue, []sessionstore.Queued{b, a}) {
		t.Fatalf("queue = %+v, want b then a", s.Queue)
	}

	l2 := create(t, st, ws)
	turn(t, l2, "t1", "p", completed(1, 1), assistant("x"))
	must(t, l2.QueueAdded(a))
	must(t, l2.Cleared())
	must(t, l2.Close())
	if s, err := st.Load(id(l2)); err != nil || len(s.Queue) != 0 {
		t.Fatalf("queue after a clear = %+v, %v", s.Queue, err)
	}
}

// TestQueueRecordsOfEarlierServers: logs of earlier servers recorded the
// whole queue at every change; they still load, and changes recorded the
// new way after them apply to the queue they left.
func TestQueueRecordsOfEarlierServers(t *testing.T) {
	t.Parallel()
	st := sessionstore.New(t.TempDir())
	l := create(t, st, ws)
	turn(t, l, "t1", "p", completed(1, 1), assistant("x"))
	must(t, l.Close())
	appendLines(t, st.LogPath(id(l)),
		`{"t":"queue","at":"2026-11-30T10:00:00Z","queue":[{"queue_id":"q-a","revision":1,"prompt":"a","request":"r1"}]}`,
		`{"t":"queue","at":"2026-11-30T10:00:01Z","queue":[{"queue_id":"q-a","revision":1,"prompt":"a","request":"r1"},{"queue_id":"q-b","revision":1,"prompt":"b","submitter":"tui","request":"r2"}]}`,
	)
	s, err := st.Load(id(l))
	must(t, err)
	want := []sessionstore.Queued{{QueueID: "q-a", Revision: 1, Prompt: "a", Request: "r1"}, {QueueID: "q-b", Revision: 1, Prompt: "b", Submitter: "tui", Request: "r2"}}
	if !reflect.DeepEqual(s.Queue, want) {
		t.Fatalf("queue = %+v", s.Queue)
	}
	l2, _, err := st.Open(id(l))
	must(t, err)
	must(t, l2.Resume("m"))
	must(t, l2.QueueRemoved("q-a"))
	must(t, l2.Close())
	if s, err = st.Load(id(l)); err != nil || !reflect.DeepEqual(s.Queue, want[1:]) {
		t.Fatalf("queue = %+v, %v", s.Queue, err)
	}
	appendLines(t, st.LogPath(id(l)), `{"t":"qmove","at":"2026-11-30T10:00:02Z"}`)
	if _, err := st.Load(id(l)); err == nil || !strings.Contains(err.Error(), "a qmove record without a queue entry") {
		t.Fatalf("a queue record without its entry: %v", err)
	}
}

// TestQueueLogGrowsLinearly: twenty prompts of the largest size queued,
// moved and removed make a log of about their size once, not of the
// queue's size at every change (earlier servers wrote 95 MB for this).
func TestQueueLogGrowsLinearly(t *testing.T) {
	t.Parallel()
	st := sessionstore.New(t.TempDir())
	l := create(t, st, ws)
	turn(t, l, "t1", "p", completed(1, 1), assistant("x"))
	prompt := strings.Repeat("p", protocol.MaxPromptBytes)
	const n = 20
	for i := range n {
		must(t, l.QueueAdded(sessionstore.Queued{QueueID: fmt.Sprint("q", i), Revision: 1, Prompt: prompt}))
	}
	for i := range n {
		must(t, l.QueueMoved(fmt.Sprint("q", i), 2, "q0"))
	}
	for i := range n {
		must(t, l.QueueRemoved(fmt.Sprint("q", i)))
	}
	must(t, l.Close())
	fi, err := os.Stat(st.LogPath(id(l)))
	must(t, err)
	if limit := int64(n*protocol.MaxPromptBytes + 64<<10); fi.Size() > limit {
		t.Fatalf("the log is %d bytes, more than the prompts once (%d)", fi.Size(), limit)
	}
	s, err := st.Load(id(l))
	must(t, err)
	if len(s.Queue) != 0 {
		t.Fatalf("queue = %d entries", len(s.Queue))
	}
}

func appendLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	defer f.Close()
	for _, line := range lines {
		if _, err := f.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUntrustedLogFiles: a session's files are not trusted to be what the
// store wrote. A log replaced by a symbolic link is refused, never
// followed or appended to; a FIFO in place of a log or of summary.json
// never blocks (listing falls back to the log; loading refuses it).
func TestUntrustedLogFiles(t *testing.T) {
	t.Parallel()
	st := sessionstore.New(t.TempDir())
	l := create(t, st, ws)
	turn(t, l, "t1", "p", completed(1, 1), assistant("x"))
	must(t, l.Close())
	sid := id(l)
	log := st.LogPath(sid)

	// A link to a file outside the state directory.
	victim := filepath.Join(t.TempDir(), "victim")
	must(t, os.WriteFile(victim, []byte("precious\n"), 0o600))
	saved := log + ".saved"
	must(t, os.Rename(log, saved))
	must(t, os.Symlink(victim, log))
	if _, err := st.Load(sid); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Fatalf("Load through a link: %v", err)
	}
	if l2, _, err := st.Open(sid); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		if l2 != nil {
			_ = l2.Resume("m")
			_ = l2.Close()
		}
		t.Fatalf("Open through a link: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Fatalf("the link's target was written: %q", b)
	}
	if got, err := st.List(ws, 0); err != nil || len(got) != 0 {
		t.Fatalf("List shows a session whose log is a link: %+v, %v", got, err)
	}

	// A FIFO as the log, then as the summary.
	must(t, os.Remove(log))
	must(t, syscall.Mkfifo(log, 0o600))
	done := make(chan error, 1)
	go func() { _, err := st.Load(sid); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "named pipe") {
			t.Fatalf("Load of a FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Load blocked on a FIFO")
	}
	must(t, os.Remove(log))
	must(t, os.Rename(saved, log))
	summary := filepath.Join(st.SessionDir(sid), sessionstore.SummaryName)
	must(t, os.Remove(summary))
	must(t, syscall.Mkfifo(summary, 0o600))
	go func() { _, err := st.List(ws, 0); done <- err }()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("List blocked on a FIFO summary")
	}
	if got, err := st.List(ws, 0); err != nil || len(got) != 1 || got[0].Title != "p" {
		t.Fatalf("List with a FIFO summary = %+v, %v; want the session, from its log", got, err)
	}
}

// TestOverlongLineIsNotReadWhole: a line of 64 MiB (a sparse file, so it
// costs no disk) makes the log corrupt, naming the line, without being
// read into memory: loading allocates less than the line (about three
// times a record's bound, the buffer grown by doubling; reading the line
// whole would take 64 MiB on its own).
func TestOverlongLineIsNotReadWhole(t *testing.T) {
	// Not parallel: it measures the whole process's allocations.
	st := sessionstore.New(t.TempDir())
	l := create(t, st, ws)
	turn(t, l, "t1", "p", completed(1, 1), assistant("x"))
	must(t, l.Close())
	log := st.LogPath(id(l))
	fi, err := os.Stat(log)
	must(t, err)
	const long = 64 << 20
	f, err := os.OpenFile(log, os.O_WRONLY, 0)
	must(t, err)
	must(t, f.Truncate(fi.Size()+long)) // NUL bytes, no newline
	_, err = f.WriteAt([]byte("\n{\"t\":\"clear\"}\n"), fi.Size()+long)
	must(t, err)
	must(t, f.Close())

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = st.Load(id(l))
	runtime.ReadMemStats(&after)
	var ce *sessionstore.CorruptError
	if !errors.As(err, &ce) || ce.Line != 6 || !strings.Contains(err.Error(), "longer than the 16777216 bytes a record may have") {
		t.Fatalf("Load = %v, want line 6 refused as too long", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 56<<20 {
		t.Fatalf("loading allocated %d MiB for a %d MiB line", alloc>>20, long>>20)
	}
	// At the bound: a line of exactly MaxRecordBytes is read (and is not
	// a record); one byte more is refused as too long.
	for _, n := range []int64{sessionstore.MaxRecordBytes, sessionstore.MaxRecordBytes + 1} {
		f, err = os.OpenFile(log, os.O_WRONLY, 0)
		must(t, err)
		must(t, f.Truncate(fi.Size()))
		must(t, f.Truncate(fi.Size()+n))
		_, err = f.WriteAt([]byte("\n{\"t\":\"clear\"}\n"), fi.Size()+n)
		must(t, err)
		must(t, f.Close())
		_, err = st.Load(id(l))
		want := "not a valid record"
		if n > sessionstore.MaxRecordBytes {
			want = "longer than"
		}
		if !errors.As(err, &ce) || ce.Line != 6 || !strings.Contains(err.Error(), want) {
			t.Fatalf("a line of %d bytes: %v, want line 6 refused (%s)", n, err, want)
		}
	}
	// The same line without its newline is a torn write: ignored.
	f, err = os.OpenFile(log, os.O_WRONLY, 0)
	must(t, err)
	must(t, f.Truncate(fi.Size()))
	must(t, f.Truncate(fi.Size()+long))
	must(t, f.Close())
	if s, err := st.Load(id(l)); err != nil || len(s.History) != 2 {
		t.Fatalf("a torn over-long last line: %v", err)
	}
}

// TestOverlongRecordStopsTheLog: the writer never writes a record a load
// would refuse; it stops the log there, which resumes up to what came
// before.
func TestOverlongRecordStopsTheLog(t *testing.T) {
	t.Parallel()
	st := sessionstore.New(t.TempDir())
	l := create(t, st, ws)
	turn(t, l, "t1", "p", completed(1, 1), assistant("x"))
	huge := provider.Message{Role: provider.RoleTool, ToolCallID: "c", Content: strings.Repeat("\x01", sessionstore.MaxRecordBytes/6+1)}
	if err := l.Message("t2", huge, false); err == nil || !strings.Contains(err.Error(), "a record may have") {
		t.Fatalf("writing an over-long record: %v", err)
	}
	if err := l.Message("t2", provider.Message{Role: provider.RoleUser, Content: "later"}, false); !errors.Is(err, sessionstore.ErrStopped) {
		t.Fatalf("a write after the stop: %v", err)
	}
	must(t, l.Close())
	if s, err := st.Load(id(l)); err != nil || len(s.History) != 2 {
		t.Fatalf("Load = %v, %v", s, err)
	}
}
