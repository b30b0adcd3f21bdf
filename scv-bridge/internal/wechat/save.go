package wechat

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// mediaRef is a Media as it is kept in a stored message: everything the
// download needs, so a message stored before a crash is fetched after it
// from the store alone.
type mediaRef struct {
	QueryParam string `json:"q,omitempty"`
	FullURL    string `json:"u,omitempty"`
	Key        []byte `json:"k,omitempty"`
	KeyErr     string `json:"e,omitempty"`
}

// Ref encodes m for a stored message (the bridge's core keeps it as the
// resource's key); ParseMediaRef reads it back.
func (m *Media) Ref() string {
	b, _ := json.Marshal(mediaRef{QueryParam: m.QueryParam, FullURL: m.FullURL, Key: m.Key, KeyErr: m.KeyErr})
	return string(b)
}

// ParseMediaRef is the Media that Ref encoded.
func ParseMediaRef(ref string) (*Media, error) {
	var r mediaRef
	if err := json.Unmarshal([]byte(ref), &r); err != nil {
		return nil, fmt.Errorf("wechat: a stored media reference is unreadable: %w", err)
	}
	return &Media{QueryParam: r.QueryParam, FullURL: r.FullURL, Key: r.Key, KeyErr: r.KeyErr}, nil
}

// Fetch downloads and decrypts m into w, refusing more than limit bytes
// of plain content (0: the client's own limit), and returns the content's
// type as sniffed from its first bytes, which names the saved file.
func (c *Client) Fetch(ctx context.Context, m *Media, w io.Writer, limit int64) (string, error) {
	plain, err := c.Download(ctx, m)
	if err != nil {
		return "", err
	}
	if limit > 0 && int64(len(plain)) > limit {
		return "", fmt.Errorf("wechat: the media is larger than %d MiB, the limit: %w", limit>>20, errBadInput)
	}
	if _, err := w.Write(plain); err != nil {
		return "", fmt.Errorf("wechat: saving the media: %w", err)
	}
	return http.DetectContentType(plain), nil
}
