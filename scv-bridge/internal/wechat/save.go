package wechat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/chatlog"
)

// MediaFileName is the name under which item i of m is saved: the message
// id and the item's index, then the sender's file name made safe (for a
// file) or an extension of the kind (".jpg", ".silk", ".mp4"). Names never
// collide within a conversation and never leave its media directory.
func MediaFileName(m Message, i int) string {
	base := safeName(m.ID) + "-" + strconv.Itoa(i+1)
	it := m.Items[i]
	switch it.Kind {
	case KindImage:
		return base + ".jpg"
	case KindVoice:
		return base + ".silk"
	case KindVideo:
		return base + ".mp4"
	case KindFile:
		if n := safeName(it.FileName); n != "" {
			return base + "-" + n
		}
	}
	return base + ".bin"
}

// safeName keeps what chatlog.CheckSegment allows and at most 100 bytes,
// without a leading dot.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-@+=", r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		if b.Len() >= 100 {
			break
		}
	}
	return strings.TrimLeft(b.String(), ".")
}

// SaveMedia downloads item i of m into dir (a conversation's media
// directory, chatlog.MediaDir), mode 0600, atomically, and returns its
// path. A file already there (a redelivered message) is not fetched again.
func (c *Client) SaveMedia(ctx context.Context, m Message, i int, dir string) (string, error) {
	if i < 0 || i >= len(m.Items) || m.Items[i].Media == nil {
		return "", fmt.Errorf("wechat: item %d of message %s has no media: %w", i, m.ID, errBadInput)
	}
	name := MediaFileName(m, i)
	if err := chatlog.CheckSegment(name); err != nil {
		return "", fmt.Errorf("wechat: media name %w", err)
	}
	path := filepath.Join(dir, name)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		return path, nil
	}
	data, err := c.Download(ctx, m.Items[i].Media)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("wechat: creating the media directory: %w", err)
	}
	if err := atomicfile.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("wechat: saving the media: %w", err)
	}
	return path, nil
}
