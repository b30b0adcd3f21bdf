package wechat

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/wechat/ilinktest"
)

// fixture fills testdata/message.json with media stored on fs, each key
// in another of the forms the API uses.
func fixture(t testing.TB, fs *ilinktest.Server) (string, map[Kind][]byte) {
	t.Helper()
	raw, err := os.ReadFile("testdata/message.json")
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	plain := map[Kind][]byte{KindImage: []byte("\x89PNG image bytes"), KindVoice: bytes.Repeat([]byte("silk"), 40),
		KindFile: []byte("%PDF-1.7 exactly sixteen"), KindVideo: bytes.Repeat([]byte{0, 1, 2}, 1000)}
	put := func(kind Kind, paramName, keyName string, form func([]byte) string) {
		param, key := fs.AddMedia(plain[kind])
		s = strings.Replace(s, `"`+paramName+`"`, `"`+param+`"`, 1)
		s = strings.Replace(s, keyName, form(key), 1)
	}
	put(KindImage, "IMG", "IMGKEYHEX", hex.EncodeToString)
	put(KindVoice, "VOICE", "VOICEKEYB64RAW", base64.StdEncoding.EncodeToString)
	put(KindFile, "FILE", "FILEKEYB64HEX", func(k []byte) string { return base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString(k))) })
	put(KindVideo, "VIDEO", "VIDEOKEYB64RAW", base64.RawStdEncoding.EncodeToString)
	return s, plain
}

func TestDecodeAndDownloadEachKind(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	raw, plain := fixture(t, fs)
	m, err := DecodeMessage([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "7012" || m.From != "o9cq-peer@im.wechat" || m.ContextToken != "CK3E-token" || m.Seq != 7 ||
		!m.Created.Equal(time.UnixMilli(1760000000000)) || m.FromBot {
		t.Fatalf("header %+v", m)
	}
	if m.Quote == nil || m.Quote.Title != "earlier" || m.Quote.Item.Text != "the quoted text" {
		t.Errorf("quote %+v", m.Quote)
	}
	if got := m.Text(); got != "see these\nremind me to call mum" {
		t.Errorf("Text() = %q: the voice transcript belongs to the text", got)
	}
	kinds := []Kind{KindText, KindImage, KindVoice, KindFile, KindVideo, KindUnknown}
	for i, it := range m.Items {
		if it.Kind != kinds[i] {
			t.Errorf("item %d is %s, want %s", i, it.Kind, kinds[i])
		}
		if it.Media == nil {
			continue
		}
		got, err := c.Download(context.Background(), it.Media)
		if err != nil || !bytes.Equal(got, plain[it.Kind]) {
			t.Errorf("%s download: %q, %v", it.Kind, got, err)
		}
	}
	if v := m.Items[2]; v.Duration != 3200*time.Millisecond || v.Text != "remind me to call mum" {
		t.Errorf("voice %+v", v)
	}
	if f := m.Items[3]; f.FileName != "a.pdf" || f.Size != 12345 {
		t.Errorf("file %+v", f)
	}
	if m.Items[4].Size != 4096 {
		t.Errorf("video %+v", m.Items[4])
	}
}

func TestDownloadRefusals(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, func(o *Options) { o.MaxMediaBytes = 64 })
	param, key := fs.AddMedia(bytes.Repeat([]byte("x"), 100))
	ctx := context.Background()
	if _, err := c.Download(ctx, &Media{QueryParam: param, Key: key}); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Errorf("over the cap: %v", err)
	}
	small, key2 := fs.AddMedia([]byte("small"))
	if _, err := c.Download(ctx, &Media{QueryParam: small, Key: key}); err == nil {
		t.Error("decrypted with the wrong key")
	}
	if _, err := c.Download(ctx, &Media{QueryParam: small, KeyErr: "no key"}); err == nil || !strings.Contains(err.Error(), "no key") {
		t.Errorf("no key: %v", err)
	}
	var ae *APIError
	if _, err := c.Download(ctx, &Media{QueryParam: "gone", Key: key2}); !errors.As(err, &ae) || ae.HTTPStatus != 404 {
		t.Errorf("missing media: %v", err)
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	for _, s := range []string{``, `[]`, `{"message_id":null}`, `{"item_list":[]}`} {
		if _, err := DecodeMessage([]byte(s)); err == nil {
			t.Errorf("DecodeMessage(%q) accepted", s)
		}
	}
	m, err := DecodeMessage([]byte(`{"message_id":"1","item_list":[{"type":2,"image_item":{"media":{"aes_key":"zz"}}}]}`))
	if err != nil || m.Items[0].Media.Key != nil || m.Items[0].Media.KeyErr == "" {
		t.Errorf("a bad key must leave the item with KeyErr: %+v, %v", m.Items, err)
	}
}

func FuzzDecodeMessage(f *testing.F) {
	raw, _ := os.ReadFile("testdata/message.json")
	f.Add(raw)
	f.Add([]byte(`{"message_id":"1","item_list":[{"type":3,"voice_item":{"text":"hi"}}],"ref_msg":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeMessage(data)
		if err != nil {
			return
		}
		if m.ID == "" {
			t.Fatal("decoded a message without an id")
		}
		for _, it := range m.Items {
			if it.Media != nil && it.Media.Key != nil && len(it.Media.Key) != 16 {
				t.Fatalf("a key of %d bytes", len(it.Media.Key))
			}
		}
		_ = m.Text()
	})
}

func BenchmarkDecodeMessage(b *testing.B) {
	raw, err := os.ReadFile("testdata/message.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeMessage(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFetchFromAStoredRef: each media kind of a message, encoded for the
// store and read back, downloads and decrypts to the sent bytes; the
// limit holds and a text item has no media.
func TestFetchFromAStoredRef(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	raw, plain := fixture(t, fs)
	m, err := DecodeMessage([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		ref, err := ParseMediaRef(m.Items[i].Media.Ref())
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if _, err := c.Fetch(context.Background(), ref, &got, 0); err != nil || !bytes.Equal(got.Bytes(), plain[m.Items[i].Kind]) {
			t.Fatalf("item %d (%s): %d bytes, %v", i, m.Items[i].Kind, got.Len(), err)
		}
		if n := int64(len(plain[m.Items[i].Kind])); n > 1 {
			if _, err := c.Fetch(context.Background(), ref, io.Discard, n-1); err == nil {
				t.Errorf("item %d: %d bytes passed a limit of %d", i, n, n-1)
			}
		}
	}
	if m.Items[0].Media != nil {
		t.Error("a text item has media")
	}
	if _, err := ParseMediaRef("{"); err == nil {
		t.Error("a broken reference was read")
	}
}
