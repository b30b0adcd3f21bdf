package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scv-cli/scv/shared/chatlog"
	"github.com/scv-cli/scv/shared/protocol"
)

// writeLog writes n owner messages into the fixture's chat log.
func writeLog(t *testing.T, f *fixture, n int, text func(i int) string) string {
	t.Helper()
	w, err := chatlog.OpenWriter(f.set.logDir, chatlog.WriterOptions{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var ep string
	for i := range n {
		ref, err := w.Append(chatlog.Message{Time: time.Date(2026, 9, 26, 14, 4, 5+i, 0, time.UTC), Who: chatlog.Owner, Text: text(i)})
		if err != nil {
			t.Fatal(err)
		}
		ep = ref.Episode
	}
	return ep
}

func TestHistoryActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	h := &History{set: f.set}
	ep := writeLog(t, f, 40, func(i int) string { return fmt.Sprintf("message %d about the blue door", i) })
	if ep != "2026/2026-09-21_2026-09-27/2026-09-26T14-04-05" {
		t.Fatalf("episode %s", ep)
	}
	res, plan, err := call(t, h, f.env, map[string]any{"action": "search", "query": "BLUE door", "limit": 3})
	if err != nil || plan.Risk != protocol.RiskReadOnly {
		t.Fatal(err, plan)
	}
	var found chatlog.SearchResult
	if err := json.Unmarshal([]byte(res.Output), &found); err != nil {
		t.Fatal(err, res.Output)
	}
	if len(found.Hits) != 3 || !found.More || found.Hits[0].Index != 39 || found.Hits[0].Episode != ep {
		t.Errorf("search %+v", found)
	}
	res, _, _ = call(t, h, f.env, map[string]any{"action": "episodes"})
	var eps chatlog.EpisodesResult
	_ = json.Unmarshal([]byte(res.Output), &eps)
	if len(eps.Episodes) != 1 || eps.Episodes[0].Messages != 40 {
		t.Errorf("episodes %s", res.Output)
	}
	res, _, _ = call(t, h, f.env, map[string]any{"action": "read", "episode": ep, "offset": 30})
	var page chatlog.ReadResult
	_ = json.Unmarshal([]byte(res.Output), &page)
	if page.Total != 40 || len(page.Messages) != 10 || page.More {
		t.Errorf("read %s", res.Output)
	}
	for _, bad := range []map[string]any{
		{"action": "search", "query": " "},
		{"action": "read", "episode": "../../../etc/passwd"},
		{"action": "read", "episode": "2026/2026-09-14_2026-09-20/2026-09-26T14-04-05"},
		{"action": "episodes", "before": "yesterday"},
	} {
		if _, _, err := call(t, h, f.env, bad); err == nil {
			t.Errorf("%v was accepted", bad)
		}
	}
}

func TestHistoryBoundedByOutputLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	h := &History{set: f.set}
	writeLog(t, f, 100, func(i int) string { return strings.Repeat("needle ", 30) + fmt.Sprint(i) })
	f.env.OutputLimit = 2000
	res, _, err := call(t, h, f.env, map[string]any{"action": "search", "query": "needle", "limit": 100})
	if err != nil {
		t.Fatal(err)
	}
	var found chatlog.SearchResult
	if err := json.Unmarshal([]byte(res.Output), &found); err != nil {
		t.Fatal(err)
	}
	if len(res.Output) > 2000 || !found.More || len(found.Hits) == 0 || len(found.Hits) >= 100 || !res.Truncated {
		t.Errorf("%d bytes, %d hits, more %v", len(res.Output), len(found.Hits), found.More)
	}
}

func TestKeepMovesAndReports(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	k := &Keep{set: f.set}
	cat := write(t, filepath.Join(f.media, "a1-cat.jpg"), "meow")
	res, plan, err := call(t, k, f.env, map[string]any{"path": cat})
	if err != nil || !res.Success || plan.Risk != protocol.RiskFilesystem {
		t.Fatalf("%v %+v", err, res)
	}
	kept := filepath.Join(chatlog.FilesDir(f.set.logDir), "a1-cat.jpg")
	if data, err := os.ReadFile(kept); err != nil || string(data) != "meow" {
		t.Fatalf("kept file: %q %v", data, err)
	}
	if _, err := os.Lstat(cat); !errors.Is(err, os.ErrNotExist) {
		t.Error("the original is still in the media directory")
	}
	if fi, _ := os.Stat(chatlog.FilesDir(f.set.logDir)); fi.Mode().Perm() != 0o700 {
		t.Errorf("files/ mode %v", fi.Mode())
	}
	// Keeping it again reports where it is, without asking.
	res, plan, err = call(t, k, f.env, map[string]any{"path": cat})
	if err != nil || plan.Risk != protocol.RiskReadOnly || !strings.Contains(res.Output, "already kept, at "+kept) {
		t.Errorf("keeping again: %v %+v", err, res)
	}
	// The chat log shows the file as kept.
	idx, _ := chatlog.Kept(f.set.logDir)
	if idx[cat] != kept {
		t.Errorf("kept index %v", idx)
	}
	// A second file of the same name never replaces the first.
	again := write(t, filepath.Join(f.media, "a1-cat.jpg"), "purr")
	res, _, err = call(t, k, f.env, map[string]any{"path": again})
	if err != nil || !strings.Contains(res.Output, "a1-cat-2.jpg") {
		t.Fatalf("same name: %v %+v", err, res)
	}
	if data, _ := os.ReadFile(kept); string(data) != "meow" {
		t.Error("the first kept file was replaced")
	}
}

func TestKeepRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	k := &Keep{set: f.set}
	target := write(t, filepath.Join(f.user, "notes.txt"), "x")
	link := filepath.Join(f.media, "link.jpg")
	_ = os.MkdirAll(f.media, 0o700)
	_ = os.Symlink(target, link)
	cases := map[string]string{
		"relative.jpg": "not absolute",
		write(t, filepath.Join(MediaRoot(f.home), "feishu", "default", "oc_2", "x.jpg"), "x"): "not a file of this chat's media",
		write(t, filepath.Join(f.media, "sub", "x.jpg"), "x"):                                 "not a file of this chat's media",
		target:                                "not a file of this chat's media",
		link:                                  "not a regular file",
		filepath.Join(f.media, "missing.jpg"): "does not exist",
		filepath.Join(f.media, "sub"):         "not a regular file",
	}
	for p, want := range cases {
		if _, _, err := call(t, k, f.env, map[string]any{"path": p}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", p, err, want)
		}
	}
}

// TestKeepAcrossDevicesInjected makes every link from the media directory
// fail with EXDEV, as across file systems.
func TestKeepAcrossDevicesInjected(t *testing.T) {
	f := newFixture(t, nil)
	k := &Keep{set: f.set}
	files := chatlog.FilesDir(f.set.logDir)
	orig := link
	t.Cleanup(func() { link = orig })
	link = func(src, dst string) error {
		if filepath.Dir(src) != files {
			return &os.LinkError{Op: "link", Old: src, New: dst, Err: syscall.EXDEV}
		}
		return orig(src, dst)
	}
	cat := write(t, filepath.Join(f.media, "cat.jpg"), "meow")
	res, _, err := call(t, k, f.env, map[string]any{"path": cat})
	if err != nil || !res.Success {
		t.Fatalf("%v %+v", err, res)
	}
	assertKeptAlone(t, files, "cat.jpg", "meow")
	if _, err := os.Lstat(cat); !errors.Is(err, os.ErrNotExist) {
		t.Error("the original is still there")
	}
}

// TestKeepAcrossFileSystems keeps a file from a tmpfs media directory into
// an archive on another file system, when the machine has both.
func TestKeepAcrossFileSystems(t *testing.T) {
	t.Parallel()
	shm, err := os.MkdirTemp("/dev/shm", "scv-chat-")
	if err != nil {
		t.Skip("no /dev/shm to keep from: the injected EXDEV test covers the copy")
	}
	t.Cleanup(func() { _ = os.RemoveAll(shm) })
	var a, b syscall.Stat_t
	archive := t.TempDir()
	if syscall.Stat(shm, &a) != nil || syscall.Stat(archive, &b) != nil || a.Dev == b.Dev {
		t.Skip("/dev/shm and the temporary directory are one file system here")
	}
	s, err := New(Options{Home: shm, Archive: archive, Channel: protocol.Channel{Platform: "feishu", Account: "default", Conversation: "oc_1", Log: true}})
	if err != nil {
		t.Fatal(err)
	}
	cat := write(t, filepath.Join(s.media, "cat.jpg"), "meow")
	res, _, err := call(t, &Keep{set: s}, newFixture(t, nil).env, map[string]any{"path": cat})
	if err != nil || !res.Success {
		t.Fatalf("%v %+v", err, res)
	}
	assertKeptAlone(t, chatlog.FilesDir(s.logDir), "cat.jpg", "meow")
}

// assertKeptAlone checks that dir holds only name, with content: no
// temporary copy is left beside it.
func assertKeptAlone(t *testing.T, dir, name, content string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != name {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("kept files: %v", names)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, name)); string(data) != content {
		t.Errorf("kept content %q", data)
	}
	if fi, _ := os.Stat(filepath.Join(dir, name)); fi.Mode().Perm() != 0o600 {
		t.Errorf("kept mode %v", fi.Mode())
	}
}

// TestHistoryOn100kMessages: a log of 100,000 messages is searched,
// listed and read within the output limit.
func TestHistoryOn100kMessages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	start := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	// 100 episodes of 1,000 messages, written directly: the writer's
	// fsync per message would make the set-up the test.
	for e := range 100 {
		var buf []byte
		for i := range 1000 {
			ti := start.Add(time.Duration(e*1000+i) * time.Minute)
			// The line EncodeLine writes, built by hand: json.Marshal
			// under -race would make the set-up the test.
			buf = append(buf, `{"time":"`...)
			buf = ti.AppendFormat(buf, time.RFC3339)
			buf = fmt.Appendf(buf, `","who":"owner","text":"note %d on the blue door","i":%d}`+"\n", e*1000+i, i)
		}
		p := filepath.Join(f.set.logDir, chatlog.NewEpisodeID(start.Add(time.Duration(e*1000)*time.Minute)).Path())
		_ = os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, buf, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h := &History{set: f.set}
	f.env.OutputLimit = 8 << 10
	for _, args := range []map[string]any{
		{"action": "search", "query": "blue door", "limit": 100},
		{"action": "episodes", "limit": 100},
		{"action": "read", "episode": "2026/2026-01-05_2026-01-11/2026-01-05T08-00-00", "limit": 100},
	} {
		res, _, err := call(t, h, f.env, args)
		if err != nil || !res.Success {
			t.Fatalf("%v: %v %+v", args, err, res)
		}
		var v struct {
			More bool `json:"more"`
		}
		if err := json.Unmarshal([]byte(res.Output), &v); err != nil || len(res.Output) > f.env.OutputLimit || !v.More {
			t.Errorf("%v: %d bytes, more %v, %v", args, len(res.Output), v.More, err)
		}
	}
}
