package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/scv-cli/scv/shared/chatlog"
	"github.com/scv-cli/scv/shared/textcut"
)

// Resource is media an inbound message carries, for Config.Fetch.
type Resource struct {
	// Key is the platform's key of the media (Feishu's image_key or
	// file_key).
	Key string `json:"key"`
	// Kind is ResourceImage, ResourceFile, ResourceAudio or ResourceVideo.
	Kind string `json:"kind"`
	// Name is the file name the sender gave, when the platform has one.
	Name string `json:"name,omitempty"`
}

// Resource kinds.
const (
	ResourceImage = "image"
	ResourceFile  = "file"
	ResourceAudio = "audio"
	ResourceVideo = "video"
)

// FetchFunc downloads the resource r of message messageID into w, at most
// limit bytes (more is an error), and returns its Content-Type.
type FetchFunc func(ctx context.Context, messageID string, r Resource, w io.Writer, limit int64) (string, error)

// DefaultMaxMediaBytes bounds one downloaded file (Feishu serves at most
// 100 MB).
const DefaultMaxMediaBytes = 100 << 20

// fetchTimeout bounds one download.
const fetchTimeout = 2 * time.Minute

// download is the download of one message's media, started when the
// message arrives; the turn that carries the message waits for it.
type download struct {
	done  chan struct{}
	files []chatlog.File
	quote string
}

// quoteTimeout bounds fetching a quoted message's text.
const quoteTimeout = 10 * time.Second

// startDownload starts fetching m's resources into the conversation's
// media directory at once (a platform's keys may go stale), so that the
// turn finds them there. It returns nil when there is nothing to fetch.
func (c *Core) startDownload(m Message) *download {
	quote := m.QuoteOf != "" && m.Quote == "" && c.cfg.Quote != nil
	if len(m.Resources) == 0 && !quote {
		return nil
	}
	d := &download{done: make(chan struct{})}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(d.done)
		if quote {
			d.quote = c.fetchQuote(c.ctx, m)
		}
		d.files = c.fetchAll(c.ctx, m)
	}()
	return d
}

// fetchQuote returns the text m quotes, "" when it cannot be had.
func (c *Core) fetchQuote(ctx context.Context, m Message) string {
	qctx, cancel := context.WithTimeout(ctx, quoteTimeout)
	defer cancel()
	q, err := c.cfg.Quote(qctx, m.QuoteOf)
	if err != nil {
		if ctx.Err() == nil {
			c.cfg.Log.Warn("the quoted message cannot be read", "conversation", m.Conversation, "message", m.ID, "err", err)
		}
		return ""
	}
	return q
}

// fetchAll downloads every resource of m; one that cannot be saved is
// recorded as not saved, and the model is told so.
func (c *Core) fetchAll(ctx context.Context, m Message) []chatlog.File {
	var files []chatlog.File
	for _, r := range m.Resources {
		name := resourceName(r, "")
		path, saved, err := c.fetch(ctx, m, r)
		if err != nil {
			if ctx.Err() == nil {
				c.cfg.Log.Warn("a file the user sent could not be saved", "conversation", m.Conversation,
					"message", m.ID, "file", name, "err", err)
			}
			files = append(files, chatlog.File{Name: name, State: chatlog.FileNotSaved})
			continue
		}
		files = append(files, chatlog.File{Name: saved, Path: path, State: chatlog.FileMedia})
	}
	return files
}

// fetch saves one resource as <media dir>/<prefix>-<name> (0600): into a
// private temporary file first, renamed once complete, so a crash or a
// failed download never leaves a partial file under a real name. The
// prefix is derived from the message and the key, so a message fetched
// again after a restart lands on the same name.
func (c *Core) fetch(ctx context.Context, m Message, r Resource) (path, name string, err error) {
	if c.cfg.Fetch == nil || c.cfg.Home == "" {
		return "", "", errors.New("this channel does not download media")
	}
	dir, err := chatlog.MediaDir(c.cfg.Home, c.cfg.Platform, c.cfg.Account, m.Conversation)
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("create the chat media folder: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".fetch-*")
	if err != nil {
		return "", "", fmt.Errorf("create a file in the chat media: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	fctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	limit := c.cfg.MaxMediaBytes
	ct, err := c.cfg.Fetch(fctx, m.ID, r, tmp, limit)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", "", err
	}
	name = resourceName(r, ct)
	path = filepath.Join(dir, mediaPrefix(m.ID, r.Key)+"-"+name)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", "", fmt.Errorf("save the file in the chat media: %w", err)
	}
	return path, name, nil
}

// mediaPrefix tells apart files of the same name sent in different
// messages: 8 hex digits of a hash of the message id and the key.
func mediaPrefix(messageID, key string) string {
	h := sha256.Sum256([]byte(messageID + "\x00" + key))
	return hex.EncodeToString(h[:4])
}

// resourceName is the name a resource is saved under: the sender's file
// name made safe (no folders, no control characters, not hidden, at most
// 120 bytes), or one made of its kind and an extension for its
// Content-Type ("image.png", "voice.opus").
func resourceName(r Resource, contentType string) string {
	name := strings.Map(func(c rune) rune {
		if c < 0x20 || c == 0x7f || c == '/' || c == '\\' {
			return '_'
		}
		return c
	}, filepath.Base(strings.ReplaceAll(r.Name, "\\", "/")))
	name = strings.TrimLeft(strings.TrimSpace(name), ".")
	if r.Name == "" || name == "" {
		name = kindName(r.Kind)
	}
	if filepath.Ext(name) == "" {
		name += extension(r.Kind, contentType)
	}
	if len(name) > 120 {
		ext := filepath.Ext(name)
		if len(ext) > 20 {
			ext = ""
		}
		name = textcut.Prefix(strings.TrimSuffix(name, ext), 120-len(ext)) + ext
	}
	return name
}

func kindName(kind string) string {
	switch kind {
	case ResourceImage:
		return "image"
	case ResourceAudio:
		return "voice"
	case ResourceVideo:
		return "video"
	}
	return "file"
}

// extension guesses a file extension from a Content-Type; the platform
// sends voice messages as opus and video as mp4.
func extension(kind, contentType string) string {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "image/jpeg":
		return ".jpg"
	case "image/png":
		return ".png"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	case "video/mp4":
		return ".mp4"
	case "application/pdf":
		return ".pdf"
	}
	if exts, _ := mime.ExtensionsByType(mt); len(exts) > 0 && mt != "application/octet-stream" {
		return exts[0]
	}
	switch kind {
	case ResourceAudio:
		return ".opus"
	case ResourceVideo:
		return ".mp4"
	case ResourceImage:
		return ".img"
	}
	return ""
}

// waitMedia waits for the downloads of batch's messages and sets their
// files and quotes; a turn ends early only when ctx ends.
func (cv *conv) waitMedia(ctx context.Context, batch []Message) {
	for i := range batch {
		d := cv.takeDownload(batch[i].ID)
		if d == nil {
			continue
		}
		select {
		case <-d.done:
			batch[i].Files = append(batch[i].Files, d.files...)
			if d.quote != "" {
				batch[i].Quote = d.quote
			}
		case <-ctx.Done():
			return
		}
	}
}
