package chatlog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSearch(t *testing.T) {
	t.Parallel()
	dir, w := newLog(t)
	media := filepath.Join(t.TempDir(), "cat.jpg")
	msgs := []Message{
		{Time: at("2026-09-20 10:00:00"), Who: Owner, Text: "The BLUE door is open"},
		{Time: at("2026-09-20 10:01:00"), Who: SCV, Text: "Which door?", Quote: "the blue door is open"},
		{Time: at("2026-09-26 09:00:00"), Who: Owner, Files: []File{{Name: "Blue-Door.png", Path: media, State: FileMedia}}},
		{Time: at("2026-09-26 09:01:00"), Who: Owner, Voice: true, Transcript: "paint the door blue"},
		{Time: at("2026-09-26 09:02:00"), Who: System, Text: "nothing here"},
		{Time: at("2026-09-26 09:03:00"), Who: Owner, Text: `a "blue" <door> & more`},
	}
	for i, m := range msgs {
		if i == 2 {
			_ = w.CloseEpisode(m.Time)
		}
		if _, err := w.Append(m); err != nil {
			t.Fatal(err)
		}
	}
	r := NewReader(dir, ReaderOptions{Location: zone})
	res, err := r.Search(SearchQuery{Query: "blue DOOR"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range res.Hits {
		got = append(got, fmt.Sprintf("%s#%d/%s", h.Episode[len(h.Episode)-8:], h.Index, h.Who))
	}
	want := "09-00-00#3/owner,09-00-00#1/owner,09-00-00#0/owner,10-00-00#1/scv,10-00-00#0/owner"
	if strings.Join(got, ",") != want || res.More {
		t.Fatalf("hits %v more %v, want %s", got, res.More, want)
	}
	if res.Hits[0].Excerpt != `a "blue" <door> & more` || res.Hits[0].Time != "2026-09-26T09:03:00+08:00" {
		t.Errorf("first hit %+v", res.Hits[0])
	}
	// A word JSON escapes still matches (no prefilter for it).
	if res, _ := r.Search(SearchQuery{Query: `"blue"`}); len(res.Hits) != 1 {
		t.Errorf(`search for "blue" with quotes: %+v`, res)
	}
	// The limit stops the search and says more.
	res, _ = r.Search(SearchQuery{Query: "door", Limit: 2})
	if len(res.Hits) != 2 || !res.More {
		t.Errorf("limited search %+v", res)
	}
	if _, err := r.Search(SearchQuery{Query: "  "}); err == nil {
		t.Error("an empty query was accepted")
	}
}

func TestSearchReadBound(t *testing.T) {
	t.Parallel()
	dir, w := newLog(t)
	for i := range 200 {
		if _, err := w.Append(Message{Time: at("2026-09-26 09:00:00").Add(time.Duration(i) * time.Second), Who: Owner, Text: fmt.Sprintf("needle %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	r := NewReader(dir, ReaderOptions{Location: zone, MaxBytes: 2000})
	res, err := r.Search(SearchQuery{Query: "needle", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !res.More || len(res.Hits) == 0 || len(res.Hits) > 30 {
		t.Fatalf("bounded search: %d hits, more %v", len(res.Hits), res.More)
	}
	if res.Hits[0].Index != 199 {
		t.Errorf("a bounded search reads the newest messages first; got index %d", res.Hits[0].Index)
	}
}

func TestEpisodesFilters(t *testing.T) {
	t.Parallel()
	dir, w := newLog(t)
	for _, d := range []string{"2026-08-30", "2026-09-01", "2026-09-02", "2026-09-10"} {
		_, _ = w.Append(Message{Time: at(d + " 12:00:00"), Who: Owner, Text: "on " + d})
		_ = w.CloseEpisode(at(d + " 12:30:00"))
	}
	r := NewReader(dir, ReaderOptions{Location: zone})
	list := func(q EpisodesQuery) string {
		res, err := r.Episodes(q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range res.Episodes {
			out = append(out, e.OwnerStart)
		}
		return fmt.Sprintf("%s more=%v", strings.Join(out, ","), res.More)
	}
	if got := list(EpisodesQuery{Before: "2026-09-02"}); got != "on 2026-09-01,on 2026-08-30 more=false" {
		t.Errorf("before: %s", got)
	}
	if got := list(EpisodesQuery{After: "2026-09-01"}); got != "on 2026-09-10,on 2026-09-02,on 2026-09-01 more=false" {
		t.Errorf("after: %s", got)
	}
	if got := list(EpisodesQuery{Limit: 1}); got != "on 2026-09-10 more=true" {
		t.Errorf("limit: %s", got)
	}
	if _, err := r.Episodes(EpisodesQuery{Before: "2026-9-1"}); err == nil {
		t.Error("a bad date was accepted")
	}
	// Stray files in the log are not episodes.
	_ = os.WriteFile(filepath.Join(dir, "2026", "notes.jsonl"), []byte("x"), 0o600)
	_ = os.MkdirAll(filepath.Join(dir, "2026", "2026-09-07_2026-09-13"), 0o700)
	_ = os.WriteFile(filepath.Join(dir, "2026", "2026-09-07_2026-09-13", "2026-09-26T12-00-00.jsonl"), []byte("x"), 0o600)
	if got := list(EpisodesQuery{}); !strings.HasPrefix(got, "on 2026-09-10,on 2026-09-02,on 2026-09-01,on 2026-08-30 ") {
		t.Errorf("with stray files: %s", got)
	}
	// An empty, never written log lists nothing.
	empty, err := NewReader(filepath.Join(t.TempDir(), "none"), ReaderOptions{}).Episodes(EpisodesQuery{})
	if err != nil || len(empty.Episodes) != 0 {
		t.Errorf("empty log: %+v %v", empty, err)
	}
}

func TestReadPagesCutsAndFileStates(t *testing.T) {
	t.Parallel()
	dir, w := newLog(t)
	media := t.TempDir()
	present := filepath.Join(media, "present.jpg")
	gone := filepath.Join(media, "gone.jpg")
	keptFrom := filepath.Join(media, "kept.jpg")
	keptTo := filepath.Join(FilesDir(dir), "kept.jpg")
	_ = os.WriteFile(present, []byte("x"), 0o600)
	ref, _ := w.Append(Message{Time: at("2026-09-26 09:00:00"), Who: Owner, Text: strings.Repeat("é", 9000), Files: []File{
		{Name: "present.jpg", Path: present, State: FileMedia},
		{Name: "gone.jpg", Path: gone, State: FileMedia},
		{Name: "kept.jpg", Path: keptFrom, State: FileMedia},
		{Name: "big.mov", State: FileNotSaved},
	}})
	_, _ = w.Append(Message{Time: at("2026-09-26 09:01:00"), Who: SCV, Text: "here", Files: []File{{Name: "chart.png", Path: "/w/chart.png", State: FileSent}}})
	for i := range 40 {
		_, _ = w.Append(Message{Time: at("2026-09-26 09:02:00"), Who: Owner, Text: fmt.Sprint(i)})
	}
	if err := RecordKept(dir, keptFrom, keptTo); err != nil {
		t.Fatal(err)
	}
	r := NewReader(dir, ReaderOptions{Location: zone})
	page, err := r.Read(ref.Episode, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 42 || len(page.Messages) != 30 || !page.More || page.Ended {
		t.Fatalf("first page: total %d, %d messages, more %v", page.Total, len(page.Messages), page.More)
	}
	first := page.Messages[0]
	if n := len([]rune(first.Text)); n != MaxMessageChars || !first.Cut {
		t.Errorf("a long message shows %d characters (cut %v)", n, first.Cut)
	}
	states := fmt.Sprint(first.Files)
	want := fmt.Sprint([]File{{"present.jpg", present, FileMedia}, {"gone.jpg", "", FileGone}, {"kept.jpg", keptTo, FileKept}, {"big.mov", "", FileNotSaved}})
	if states != want {
		t.Errorf("file states\n got %s\nwant %s", states, want)
	}
	if page.Messages[1].Files[0].State != FileSent {
		t.Errorf("sent file: %+v", page.Messages[1].Files)
	}
	page, _ = r.Read(ref.Episode, 30, 0)
	if len(page.Messages) != 12 || page.More || page.Messages[0].Index != 30 {
		t.Errorf("second page: %d messages, more %v", len(page.Messages), page.More)
	}
	for _, bad := range []string{"2026/2026-09-21_2026-09-27/2026-09-26T09-00-01", "../x"} {
		if _, err := r.Read(bad, 0, 0); err == nil {
			t.Errorf("Read(%q) succeeded", bad)
		}
	}
	if _, err := r.Read(ref.Episode, -1, 0); err == nil {
		t.Error("a negative offset was accepted")
	}
}

func TestReaderRefusesSymlinkedEpisode(t *testing.T) {
	t.Parallel()
	dir, w := newLog(t)
	ref, _ := w.Append(Message{Time: at("2026-09-26 09:00:00"), Who: Owner, Text: "x"})
	_ = w.Close()
	secret := filepath.Join(t.TempDir(), "secret")
	_ = os.WriteFile(secret, []byte(`{"time":"2026-09-26T09:00:00Z","who":"owner","text":"secret","i":0}`+"\n"), 0o600)
	p := filepath.Join(dir, ref.Episode+Ext)
	_ = os.Remove(p)
	if err := os.Symlink(secret, p); err != nil {
		t.Fatal(err)
	}
	if _, err := NewReader(dir, ReaderOptions{}).Read(ref.Episode, 0, 0); err == nil {
		t.Fatal("an episode replaced by a symbolic link was read")
	}
}

func FuzzDecodeLine(f *testing.F) {
	f.Add([]byte(`{"time":"2026-09-26T09:00:00Z","who":"owner","text":"x","i":3}`))
	f.Add([]byte(`{"time":"2026-09-26T09:00:00Z","end":"new","i":0}`))
	f.Add([]byte(`{"time":"2026-09-26T09:00:00Z","who":"scv","files":[{"name":"a","state":"sent"}],"i":0}`))
	f.Add([]byte(`{"time":"2026-09-26T09:00`))
	f.Fuzz(func(t *testing.T, line []byte) {
		rec, err := DecodeLine(line)
		if err != nil {
			return
		}
		// What decodes encodes and decodes again to the same record.
		enc, err := EncodeLine(rec)
		if err != nil {
			return // over the line limit once re-escaped
		}
		again, err := DecodeLine(enc[:len(enc)-1])
		if err != nil {
			t.Fatalf("re-decoding %q: %v", enc, err)
		}
		if fmt.Sprint(again) != fmt.Sprint(rec) {
			t.Fatalf("round trip changed %v to %v", rec, again)
		}
	})
}

func FuzzParseEpisodeID(f *testing.F) {
	f.Add("2026/2026-09-21_2026-09-27/2026-09-26T14-04-05")
	f.Add("2026/2026-12-28_2027-01-03/2027-01-01T00-00-00")
	f.Add("../2026-09-21_2026-09-27/2026-09-26T14-04-05")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseEpisodeID(s)
		if err != nil {
			return
		}
		if id.String() != s {
			t.Fatalf("%q parsed to %s", s, id)
		}
		if filepath.Clean(id.Path()) != id.Path() || strings.Contains(s, "..") || filepath.IsAbs(s) {
			t.Fatalf("%q is not a clean relative path", s)
		}
	})
}

// TestSearchUnicodeCase: a log whose lower-casing changes length (İ) is
// still searched, without the byte prefilter.
func TestSearchUnicodeCase(t *testing.T) {
	t.Parallel()
	dir, w := newLog(t)
	_, _ = w.Append(Message{Time: at("2026-09-26 09:00:00"), Who: Owner, Text: "İstanbul trip, the BLUE door"})
	_, _ = w.Append(Message{Time: at("2026-09-26 09:01:00"), Who: SCV, Text: "Größe notiert"})
	r := NewReader(dir, ReaderOptions{Location: zone})
	for q, want := range map[string]int{"blue door": 1, "GRÖSSE": 0, "größe": 1, "trip istanbul": 1, "trip door": 1} {
		res, err := r.Search(SearchQuery{Query: q})
		if err != nil || len(res.Hits) != want {
			t.Errorf("%q: %d hits (%v), want %d", q, len(res.Hits), err, want)
		}
	}
}

// FuzzDir: a log directory made of accepted names is always one level
// per name below the archive.
func FuzzDir(f *testing.F) {
	f.Add("feishu", "default", "oc_1")
	f.Add("..", "a", "b")
	f.Add("a", "b/../../c", "d")
	f.Fuzz(func(t *testing.T, ch, acct, conv string) {
		dir, err := Dir("/archive", ch, acct, conv)
		if err != nil {
			return
		}
		rel, err := filepath.Rel("/archive", dir)
		if err != nil || strings.Count(rel, string(filepath.Separator)) != 2 || strings.HasPrefix(rel, "..") || rel != filepath.Join(ch, acct, conv) {
			t.Fatalf("Dir(%q, %q, %q) = %s", ch, acct, conv, dir)
		}
	})
}
