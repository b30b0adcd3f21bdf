package chatlog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var zone = time.FixedZone("CST", 8*3600)

func at(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02 15:04:05", s, zone)
	if err != nil {
		panic(err)
	}
	return t
}

func TestEpisodeIDISOWeeks(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"2026-09-26 14:04:05": "2026/2026-09-21_2026-09-27/2026-09-26T14-04-05",
		"2026-12-31 23:59:59": "2026/2026-12-28_2027-01-03/2026-12-31T23-59-59", // 2026-W53
		"2027-01-01 00:00:00": "2026/2026-12-28_2027-01-03/2027-01-01T00-00-00", // still 2026-W53
		"2027-01-03 12:00:00": "2026/2026-12-28_2027-01-03/2027-01-03T12-00-00",
		"2027-01-04 00:00:00": "2027/2027-01-04_2027-01-10/2027-01-04T00-00-00", // 2027-W01
		"2024-12-30 08:00:00": "2025/2024-12-30_2025-01-05/2024-12-30T08-00-00", // 2025-W01 starts in 2024
		"2026-09-21 00:00:00": "2026/2026-09-21_2026-09-27/2026-09-21T00-00-00", // a Monday
		"2026-09-27 23:00:00": "2026/2026-09-21_2026-09-27/2026-09-27T23-00-00", // a Sunday
	}
	for in, want := range cases {
		id := NewEpisodeID(at(in))
		if got := id.String(); got != want {
			t.Errorf("%s: ID %s, want %s", in, got, want)
		}
		back, err := ParseEpisodeID(want)
		if err != nil || back != id {
			t.Errorf("ParseEpisodeID(%s) = %v, %v", want, back, err)
		}
	}
}

func TestParseEpisodeIDRefuses(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"",
		"2026/2026-09-21_2026-09-27/2026-09-26T14-04-05.jsonl",
		"2027/2026-12-28_2027-01-03/2026-12-31T23-59-59", // wrong year folder
		"2026/2026-09-14_2026-09-20/2026-09-26T14-04-05", // wrong week
		"2026/2026-09-21_2026-09-27/2026-09-26T25-04-05",
		"../../../../etc/passwd/aaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"2026/2026-09-21_2026-09-27/../../../../etc/pass",
		"2026\\2026-09-21_2026-09-27\\2026-09-26T14-04-05",
	} {
		if _, err := ParseEpisodeID(s); err == nil {
			t.Errorf("ParseEpisodeID(%q) accepted it", s)
		}
	}
}

func TestCheckSegment(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"feishu", "default", "oc_5ad11d72b830411d72b836c20", "wxid_abc@im.wechat", "a.b-c+d=e"} {
		if err := CheckSegment(ok); err != nil {
			t.Errorf("CheckSegment(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", ".hidden", "a/b", "a\\b", "a b", "a\x00b", strings.Repeat("a", 129), "中文"} {
		if err := CheckSegment(bad); err == nil {
			t.Errorf("CheckSegment(%q) accepted it", bad)
		}
	}
	if _, err := Dir("relative", "feishu", "a", "b"); err == nil {
		t.Error("Dir accepted a relative archive")
	}
	if d, err := Dir("/x/archive", "feishu", "default", "oc_1"); err != nil || d != "/x/archive/feishu/default/oc_1" {
		t.Errorf("Dir = %q, %v", d, err)
	}
}

func newLog(t *testing.T) (string, *Writer) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "feishu", "default", "oc_1")
	w, err := OpenWriter(dir, WriterOptions{Location: zone})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return dir, w
}

func TestWriterEpisodesAndModes(t *testing.T) {
	t.Parallel()
	dir, w := newLog(t)
	ref, err := w.Append(Message{Time: at("2026-12-31 23:59:00"), Who: Owner, Text: "hello there, blue door"})
	if err != nil {
		t.Fatal(err)
	}
	if ref.Episode != "2026/2026-12-28_2027-01-03/2026-12-31T23-59-00" || ref.Index != 0 {
		t.Fatalf("first ref %+v", ref)
	}
	ref, _ = w.Append(Message{Time: at("2027-01-04 00:01:00"), Who: SCV, Text: "hi"})
	if ref.Index != 1 || !strings.HasPrefix(ref.Episode, "2026/") {
		t.Fatalf("an episode goes on across weeks until /new: %+v", ref)
	}
	if err := w.CloseEpisode(at("2027-01-04 00:02:00")); err != nil {
		t.Fatal(err)
	}
	ref, _ = w.Append(Message{Time: at("2027-01-04 00:03:00"), Who: Owner, Text: "new topic"})
	if ref.Episode != "2027/2027-01-04_2027-01-10/2027-01-04T00-03-00" || ref.Index != 0 {
		t.Fatalf("after /new: %+v", ref)
	}
	// Modes: 0700 directories, 0600 files, whatever the umask.
	err = filepath.Walk(filepath.Dir(filepath.Dir(filepath.Dir(dir))), func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == filepath.Dir(filepath.Dir(filepath.Dir(dir))) {
			return err
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = os.ModeDir | 0o700
		}
		if fi.Mode() != want {
			t.Errorf("%s has mode %v, want %v", p, fi.Mode(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	eps, err := NewReader(dir, ReaderOptions{Location: zone}).Episodes(EpisodesQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(eps.Episodes) != 2 || eps.More {
		t.Fatalf("episodes %+v", eps)
	}
	newest, oldest := eps.Episodes[0], eps.Episodes[1]
	if newest.Ended || newest.Messages != 1 || newest.OwnerStart != "new topic" {
		t.Errorf("newest %+v", newest)
	}
	if !oldest.Ended || oldest.Messages != 2 || oldest.OwnerStart != "hello there, blue door" ||
		oldest.First != "2026-12-31T23:59:00+08:00" || oldest.Last != "2027-01-04T00:01:00+08:00" {
		t.Errorf("oldest %+v", oldest)
	}
}

func TestWriterReopensOpenEpisodeAndSurvivesTornLine(t *testing.T) {
	t.Parallel()
	dir, w := newLog(t)
	ref, _ := w.Append(Message{Time: at("2026-09-26 14:04:05"), Who: Owner, Text: "one"})
	_, _ = w.Append(Message{Time: at("2026-09-26 14:05:00"), Who: SCV, Text: "two"})
	_ = w.Close()
	// A crash mid-append leaves a torn line.
	path := filepath.Join(dir, ref.Episode+Ext)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"time":"2026-09-26T14:06:00+08:00","who":"owner","text":"thr`)
	_ = f.Close()

	w2, err := OpenWriter(dir, WriterOptions{Location: zone})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	ref2, err := w2.Append(Message{Time: at("2026-09-26 14:07:00"), Who: Owner, Text: "four"})
	if err != nil {
		t.Fatal(err)
	}
	if ref2.Episode != ref.Episode || ref2.Index != 2 {
		t.Fatalf("reopened append %+v, want episode %s index 2", ref2, ref.Episode)
	}
	got, err := NewReader(dir, ReaderOptions{Location: zone}).Read(ref.Episode, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range got.Messages {
		texts = append(texts, fmt.Sprintf("%d:%s", m.Index, m.Text))
	}
	if strings.Join(texts, ",") != "0:one,1:two,2:four" || got.Total != 3 {
		t.Fatalf("after the torn line: %v total %d", texts, got.Total)
	}
}

func TestSameSecondEpisodes(t *testing.T) {
	t.Parallel()
	_, w := newLog(t)
	a, _ := w.Append(Message{Time: at("2026-09-26 14:04:05"), Who: Owner, Text: "a"})
	_ = w.CloseEpisode(at("2026-09-26 14:04:05"))
	b, err := w.Append(Message{Time: at("2026-09-26 14:04:05"), Who: Owner, Text: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Episode == b.Episode || !strings.HasSuffix(b.Episode, "14-04-06") {
		t.Fatalf("episodes %s and %s", a.Episode, b.Episode)
	}
}

func TestAppendRefusesBadMessages(t *testing.T) {
	t.Parallel()
	_, w := newLog(t)
	if _, err := w.Append(Message{Time: at("2026-09-26 14:04:05"), Who: "someone"}); err == nil {
		t.Error("an unknown writer was accepted")
	}
	if _, err := w.Append(Message{Who: Owner}); err == nil {
		t.Error("a message without time was accepted")
	}
	ref, err := w.Append(Message{Time: at("2026-09-26 14:04:05"), Who: Owner, Text: strings.Repeat("x", 3<<20)})
	if err != nil {
		t.Fatalf("a long message must be cut, not refused: %v", err)
	}
	if ref.Index != 0 {
		t.Fatal(ref)
	}
}

func TestWriterConcurrentAppends(t *testing.T) {
	t.Parallel()
	dir, w := newLog(t)
	const n = 50
	done := make(chan Ref, n)
	for i := range n {
		go func() {
			ref, err := w.Append(Message{Time: at("2026-09-26 09:00:00"), Who: Owner, Text: fmt.Sprint(i)})
			if err != nil {
				t.Error(err)
			}
			done <- ref
		}()
	}
	seen := map[int]bool{}
	for range n {
		seen[(<-done).Index] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct indexes for %d messages", len(seen), n)
	}
	res, err := NewReader(dir, ReaderOptions{}).Read(NewEpisodeID(at("2026-09-26 09:00:00")).String(), 0, 100)
	if err != nil || res.Total != n {
		t.Fatalf("total %d, %v", res.Total, err)
	}
}

func TestSweepMediaWithInjectedClock(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	now := time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC)
	conv, err := MediaDir(home, "feishu", "default", "oc_1")
	if err != nil {
		t.Fatal(err)
	}
	file := func(p string, age time.Duration) string {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	day := 24 * time.Hour
	old := file(filepath.Join(conv, "old.jpg"), 31*day)
	fresh := file(filepath.Join(conv, "fresh.jpg"), 29*day)
	outbox := file(filepath.Join(OutboxDir(home), "id", "out.png"), 90*day)
	nested := file(filepath.Join(conv, "sub", "deep.jpg"), 90*day)
	target := file(filepath.Join(t.TempDir(), "target"), 90*day)
	link := filepath.Join(conv, "link.jpg")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(link, now.Add(-90*day), now.Add(-90*day)) // the target's times; the link's own stay new
	n, err := SweepMedia(home, 30, now)
	if err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	if n != 1 || exists(old) || !exists(fresh) || !exists(outbox) || !exists(nested) || !exists(target) {
		t.Fatalf("removed %d; old %v fresh %v outbox %v nested %v target %v", n, exists(old), exists(fresh), exists(outbox), exists(nested), exists(target))
	}
	// A day later the fresh file's time is up too.
	if n, _ := SweepMedia(home, 30, now.Add(2*day)); n != 1 || exists(fresh) {
		t.Fatalf("a day later: removed %d, fresh still there: %v", n, exists(fresh))
	}
}
