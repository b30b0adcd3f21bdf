package wechat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv-bridge/internal/wechat/cdncrypt"
)

func TestSendMediaUploadsEncrypted(t *testing.T) {
	t.Parallel()
	for _, full := range []bool{false, true} {
		fs, c := newFake(t, nil)
		if full {
			fs.UseFullUploadURL()
		}
		fs.FailUploads(2) // 5xx is retried
		var cur string
		inbound(t, fs, c, &cur, "m1", peer, "send me the chart")
		files := []OutMedia{
			{Kind: KindImage, Name: "chart.png", Data: []byte("\x89PNG exactly 16b")},
			{Kind: KindVideo, Name: "clip.mp4", Data: bytes.Repeat([]byte{7}, 1000)},
			{Kind: KindFile, Name: "report.pdf", Data: []byte("%PDF")},
		}
		for i, f := range files {
			f.Peer, f.ClientID, f.Class = peer, "out-"+f.Name, ClassFinal
			if err := c.SendMedia(context.Background(), f); err != nil {
				t.Fatalf("full=%v %s: %v", full, f.Name, err)
			}
			up := fs.Uploads()[i]
			if up.MediaType != i+1 || !bytes.Equal(up.Plain, f.Data) || up.To != peer {
				t.Errorf("upload %d: %+v", i, up)
			}
		}
		sent := fs.Sent()
		if len(sent) != 3 {
			t.Fatalf("%d messages", len(sent))
		}
		var img struct {
			Type  int `json:"type"`
			Image struct {
				Media struct {
					Param  string `json:"encrypt_query_param"`
					AESKey string `json:"aes_key"`
				} `json:"media"`
				MidSize int `json:"mid_size"`
			} `json:"image_item"`
		}
		if err := json.Unmarshal(sent[0].Items[0], &img); err != nil || img.Type != 2 || img.Image.MidSize != 32 || img.Image.Media.Param == "" {
			t.Errorf("image item %s: %v", sent[0].Items[0], err)
		}
		// What we sent can be fetched and read back as the peer would.
		key, err := cdncrypt.ParseKey(img.Image.Media.AESKey)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Download(context.Background(), &Media{QueryParam: img.Image.Media.Param, Key: key})
		if err != nil || !bytes.Equal(got, files[0].Data) {
			t.Errorf("round trip: %q, %v", got, err)
		}
		if !bytes.Contains(sent[2].Items[0], []byte(`"file_name":"report.pdf"`)) || !bytes.Contains(sent[2].Items[0], []byte(`"len":"4"`)) {
			t.Errorf("file item %s", sent[2].Items[0])
		}
	}
}

func TestSendMediaRefusals(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, func(o *Options) { o.MaxMediaBytes = 10 })
	var cur string
	inbound(t, fs, c, &cur, "m1", peer, "x")
	ctx := context.Background()
	for _, m := range []OutMedia{
		{Kind: KindVoice, Name: "a.silk", Data: []byte("x")},
		{Kind: KindFile, Name: "empty.txt"},
		{Kind: KindFile, Name: "big.bin", Data: make([]byte, 11)},
	} {
		m.Peer, m.ClientID, m.Class = peer, "id", ClassFinal
		if err := c.SendMedia(ctx, m); err == nil || !strings.Contains(err.Error(), m.Name[len(m.Name)-4:]) && m.Kind != KindVoice {
			t.Errorf("%s: %v", m.Name, err)
		}
	}
	fs.FailUploads(4) // more than the retries
	err := c.SendMedia(ctx, OutMedia{Peer: peer, ClientID: "id2", Class: ClassFinal, Kind: KindFile, Name: "a", Data: []byte("a")})
	var ae *APIError
	if !errors.As(err, &ae) || ae.HTTPStatus != 500 || len(fs.Sent()) != 0 {
		t.Errorf("after 4 failed uploads: %v", err)
	}
	// Over budget: held, no call.
	c.Budget().Spend(peer, ClassFinal, DefaultSendBudget)
	if err := c.SendMedia(ctx, OutMedia{Peer: peer, ClientID: "id3", Class: ClassFinal, Kind: KindFile, Name: "a", Data: []byte("a")}); !errors.Is(err, ErrOverBudget) {
		t.Errorf("over budget: %v", err)
	}
}

func TestMediaKindOf(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\n0000")
	for _, c := range []struct {
		kind, name string
		data       []byte
		want       Kind
	}{
		{"image", "chart.png", png, KindImage},
		{"", "chart.bin", png, KindImage},
		{"video", "clip.MP4", []byte("x"), KindVideo},
		{"video", "clip.webm", []byte("x"), KindFile},
		{"file", "report.pdf", []byte("%PDF"), KindFile},
		{"", "notes.txt", []byte("text"), KindFile},
	} {
		if got := MediaKindOf(c.kind, c.name, c.data); got != c.want {
			t.Errorf("MediaKindOf(%q, %q) = %q; want %q", c.kind, c.name, got, c.want)
		}
	}
}
