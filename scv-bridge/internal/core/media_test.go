package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/scv-cli/scv/shared/chatlog"
)

// fakeFetch serves data by key; the key "fail" fails, and data over the
// limit is refused as the Feishu adapter refuses it.
func fakeFetch(data map[string]string, calls *atomic.Int32) FetchFunc {
	return func(_ context.Context, _ string, r Resource, w io.Writer, limit int64) (string, error) {
		calls.Add(1)
		d, ok := data[r.Key]
		if !ok {
			return "", errors.New("no such resource")
		}
		if int64(len(d)) > limit {
			return "", fmt.Errorf("larger than %d bytes", limit)
		}
		_, err := io.WriteString(w, d)
		ct := "application/octet-stream"
		if strings.HasPrefix(d, "\x89PNG") {
			ct = "image/png"
		}
		return ct, err
	}
}

func TestMediaDownloadedAndGivenToTheModel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var calls atomic.Int32
	e := start(t, dir, func(c *Config) {
		c.Home = dir
		c.MaxMediaBytes = 100
		c.Fetch = fakeFetch(map[string]string{"img": "\x89PNG\r\n\x1a\nxx", "doc": "notes", "big": strings.Repeat("x", 101)}, &calls)
	})
	m := Message{ID: "m1", Conversation: "oc_owner", Sender: "ou_owner", Direct: true, Text: "look",
		Resources: []Resource{{Key: "img", Kind: ResourceImage}, {Key: "doc", Kind: ResourceFile, Name: "../../.evil\nname.txt"},
			{Key: "big", Kind: ResourceFile, Name: "big.bin"}, {Key: "fail", Kind: ResourceAudio}}}
	if err := e.core.Accept(m); err != nil {
		t.Fatal(err)
	}
	e.replies(1)
	_, prompts := e.agent.snapshot()
	media := filepath.Join(dir, "state", "media", "feishu", "work", "oc_owner")
	img := filepath.Join(media, mediaPrefix("m1", "img")+"-image.png")
	doc := filepath.Join(media, mediaPrefix("m1", "doc")+"-evil_name.txt")
	for _, want := range []string{"[file image.png saved at " + img + "]", "[file evil_name.txt saved at " + doc + "]",
		"[file big.bin was not saved]", "[file voice.opus was not saved]"} {
		if !strings.Contains(prompts[0], want) {
			t.Fatalf("the prompt %q lacks %q", prompts[0], want)
		}
	}
	for _, p := range []string{img, doc} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v, want a 0600 file", p, fi, err)
		}
	}
	ents, _ := os.ReadDir(media)
	if len(ents) != 2 {
		t.Fatalf("the media folder holds %d entries (a partial download left?), want 2", len(ents))
	}
	// The owner's log records the files' states.
	e.stop()
	log := readEpisodes(t, filepath.Join(dir, "archive", "feishu", "work", "oc_owner"))
	if !strings.Contains(log, `"state":"media"`) || !strings.Contains(log, `"name":"big.bin","state":"not_saved"`) {
		t.Fatalf("the chat log:\n%s", log)
	}
}

func TestMediaOfAGatedSenderIsNotDownloaded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var calls atomic.Int32
	e := start(t, dir, func(c *Config) {
		c.Home = dir
		c.Fetch = fakeFetch(map[string]string{"img": "data"}, &calls)
		c.Allow = func(string) bool { return false }
	})
	if err := e.core.Accept(Message{ID: "m1", Conversation: "oc_x", Sender: "ou_stranger", Direct: true,
		Resources: []Resource{{Key: "img", Kind: ResourceImage}}}); err != nil {
		t.Fatal(err)
	}
	e.stop()
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d downloads for a sender the gate refuses", n)
	}
}

func TestResourceName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		r    Resource
		ct   string
		want string
	}{
		{Resource{Kind: ResourceImage}, "image/jpeg", "image.jpg"},
		{Resource{Kind: ResourceAudio}, "", "voice.opus"},
		{Resource{Kind: ResourceVideo, Name: "clip"}, "video/mp4", "clip.mp4"},
		{Resource{Kind: ResourceFile, Name: "a/b\\c.pdf"}, "", "c.pdf"},
		{Resource{Kind: ResourceFile, Name: "..."}, "", "file"},
		{Resource{Kind: ResourceFile, Name: strings.Repeat("é", 100) + ".txt"}, "", strings.Repeat("é", 58) + ".txt"},
	} {
		if got := resourceName(c.r, c.ct); got != c.want {
			t.Errorf("resourceName(%+v, %q) = %q, want %q", c.r, c.ct, got, c.want)
		}
	}
}

// readEpisodes returns every episode file of a chat log, joined.
func readEpisodes(t *testing.T, dir string) string {
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

// FuzzResourceName: whatever a sender names a file, it is saved as one
// plain, visible name of bounded length in the conversation's folder.
func FuzzResourceName(f *testing.F) {
	for _, s := range []string{"", "a.txt", "../../etc/passwd", ".hidden", "a\x00b", "x/..", strings.Repeat("é", 200)} {
		f.Add(s, "image/png")
	}
	f.Fuzz(func(t *testing.T, name, ct string) {
		for _, kind := range []string{ResourceImage, ResourceFile, ResourceAudio, ResourceVideo} {
			got := resourceName(Resource{Kind: kind, Name: name}, ct)
			if got == "" || strings.ContainsAny(got, "/\\\x00\n") || strings.HasPrefix(got, ".") || len(got) > 140 ||
				got != filepath.Base(got) {
				t.Fatalf("resourceName(%q, %q) = %q", name, ct, got)
			}
		}
	})
}
