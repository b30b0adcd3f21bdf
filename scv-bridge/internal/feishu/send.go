package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/scv-cli/scv/shared/textcut"
)

// Platform limits (docs/channels.md).
const (
	// MaxImageBytes is the largest image upload; bigger images go as files.
	MaxImageBytes = 10 << 20
	// MaxFileBytes is the largest file upload.
	MaxFileBytes = 30 << 20
	// ChunkRunes is the size of one message of a long text.
	ChunkRunes = 4000
	// MaxUUIDLen is the longest idempotency key the platform accepts.
	MaxUUIDLen = 50
)

// IDType says what kind of id a Recipient holds.
type IDType string

// Id types of a recipient.
const (
	ByOpenID IDType = "open_id"
	ByChatID IDType = "chat_id"
)

// Recipient is where a new message goes: a user by open_id (unprompted
// messages to the owner) or a chat by chat_id.
type Recipient struct {
	Type IDType
	ID   string
}

// Message is a message ready to send: its msg_type and its content, a
// JSON document as the platform wants it for that type.
type Message struct {
	Type    string
	Content string
}

func message(typ string, content any) Message {
	b, _ := json.Marshal(content)
	return Message{Type: typ, Content: string(b)}
}

// TextMessage is a plain text message.
func TextMessage(text string) Message { return message("text", map[string]string{"text": text}) }

// PostMessage is a rich text message whose body is Markdown, one md
// element per paragraph.
func PostMessage(title, markdown string) Message {
	var paras [][]map[string]string
	for p := range strings.SplitSeq(markdown, "\n\n") {
		if strings.TrimSpace(p) != "" {
			paras = append(paras, []map[string]string{{"tag": "md", "text": p}})
		}
	}
	if paras == nil {
		paras = [][]map[string]string{{{"tag": "md", "text": markdown}}}
	}
	return message("post", map[string]any{"zh_cn": map[string]any{"title": title, "content": paras}})
}

// ImageMessage shows an uploaded image.
func ImageMessage(imageKey string) Message {
	return message("image", map[string]string{"image_key": imageKey})
}

// FileMessage offers an uploaded file.
func FileMessage(fileKey string) Message {
	return message("file", map[string]string{"file_key": fileKey})
}

// MediaMessage plays an uploaded mp4.
func MediaMessage(fileKey string) Message {
	return message("media", map[string]string{"file_key": fileKey})
}

// CardMessage shows a CardKit card entity.
func CardMessage(cardID string) Message {
	return message("interactive", map[string]any{"type": "card", "data": map[string]string{"card_id": cardID}})
}

// Sent is what the platform says of a message it accepted.
type Sent struct {
	MessageID string `json:"message_id"`
	ChatID    string `json:"chat_id"`
}

// Send sends m to r. key is the idempotency key (the outbox row id): the
// platform delivers at most one message per key within an hour, so a send
// retried after a crash is not shown twice. It must be non-empty and at
// most MaxUUIDLen bytes.
func (c *Client) Send(ctx context.Context, r Recipient, m Message, key string) (Sent, error) {
	if r.ID == "" || (r.Type != ByOpenID && r.Type != ByChatID) {
		return Sent{}, fmt.Errorf("feishu send: the recipient needs an open_id or chat_id: %w", errBadInput)
	}
	if err := checkKey(key); err != nil {
		return Sent{}, err
	}
	var s Sent
	err := c.call(ctx, request{
		op: "send message", method: http.MethodPost, path: "/open-apis/im/v1/messages",
		query:     url.Values{"receive_id_type": {string(r.Type)}},
		jsonBody:  map[string]string{"receive_id": r.ID, "msg_type": m.Type, "content": m.Content, "uuid": key},
		recipient: string(r.Type) + ":" + r.ID,
	}, &s)
	return s, err
}

// Reply answers the message messageID in its chat; chatID (that message's
// chat) is what the send rate is counted against. key is as for Send.
func (c *Client) Reply(ctx context.Context, chatID, messageID string, m Message, key string) (Sent, error) {
	if messageID == "" {
		return Sent{}, fmt.Errorf("feishu reply: the message id is empty: %w", errBadInput)
	}
	if err := checkKey(key); err != nil {
		return Sent{}, err
	}
	rl := "chat_id:" + chatID
	if chatID == "" {
		rl = "message:" + messageID
	}
	var s Sent
	err := c.call(ctx, request{
		op: "reply", method: http.MethodPost, path: "/open-apis/im/v1/messages/" + url.PathEscape(messageID) + "/reply",
		jsonBody:  map[string]any{"msg_type": m.Type, "content": m.Content, "uuid": key, "reply_in_thread": false},
		recipient: rl,
	}, &s)
	return s, err
}

func checkKey(key string) error {
	if key == "" || len(key) > MaxUUIDLen {
		return fmt.Errorf("feishu: the idempotency key must have 1 to %d bytes, not %d: %w", MaxUUIDLen, len(key), errBadInput)
	}
	return nil
}

// Destination is where SendLong puts its messages: a reply to ReplyTo in
// chat To.ID when ReplyTo is set, else a new message to To.
type Destination struct {
	To      Recipient
	ReplyTo string
}

// SendLong sends text as Markdown posts of at most ChunkRunes characters
// each, cut at paragraph or line breaks. Chunk i (from 0) has the key
// key+"-"+i, so key may have at most MaxUUIDLen-4 bytes and a resend after
// a crash repeats none. Only the first chunk is a reply. It returns the
// messages sent; on an error, those sent before it.
func (c *Client) SendLong(ctx context.Context, d Destination, text, key string) ([]Sent, error) {
	if len(key) > MaxUUIDLen-4 {
		return nil, fmt.Errorf("feishu: the idempotency key of a long text may have at most %d bytes: %w", MaxUUIDLen-4, errBadInput)
	}
	chunks := textcut.Chunks(text, ChunkRunes)
	if len(chunks) > 999 {
		return nil, fmt.Errorf("feishu: the text (%d characters) would need more than 999 messages: %w", utf8.RuneCountInString(text), errBadInput)
	}
	var out []Sent
	for i, ch := range chunks {
		k := fmt.Sprintf("%s-%d", key, i)
		var s Sent
		var err error
		if i == 0 && d.ReplyTo != "" {
			s, err = c.Reply(ctx, d.To.ID, d.ReplyTo, PostMessage("", ch), k)
		} else {
			s, err = c.Send(ctx, d.To, PostMessage("", ch), k)
		}
		if err != nil {
			return out, fmt.Errorf("feishu: part %d of %d of a long text: %w", i+1, len(chunks), err)
		}
		out = append(out, s)
	}
	return out, nil
}

// FileKind is the file_type of a file upload.
type FileKind string

// File kinds the platform knows; FileStream is any other file.
const (
	FileOpus   FileKind = "opus"
	FileMP4    FileKind = "mp4"
	FilePDF    FileKind = "pdf"
	FileDoc    FileKind = "doc"
	FileXLS    FileKind = "xls"
	FilePPT    FileKind = "ppt"
	FileStream FileKind = "stream"
)

// FileKindOf guesses the file_type from a file name's extension.
func FileKindOf(name string) FileKind {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".opus":
		return FileOpus
	case ".mp4":
		return FileMP4
	case ".pdf":
		return FilePDF
	case ".doc", ".docx":
		return FileDoc
	case ".xls", ".xlsx":
		return FileXLS
	case ".ppt", ".pptx":
		return FilePPT
	}
	return FileStream
}

// UploadImage uploads an image of at most MaxImageBytes (JPEG, PNG, WEBP,
// GIF, TIFF, BMP or ICO) and returns its image_key.
func (c *Client) UploadImage(ctx context.Context, name string, data []byte) (string, error) {
	if len(data) == 0 || len(data) > MaxImageBytes {
		return "", fmt.Errorf("feishu: the image %q has %d bytes; an image must have 1 byte to %d MiB (send bigger ones as a file): %w",
			name, len(data), MaxImageBytes>>20, errBadInput)
	}
	body, ct, err := multipartBody(map[string]string{"image_type": "message"}, "image", name, data)
	if err != nil {
		return "", err
	}
	var out struct {
		ImageKey string `json:"image_key"`
	}
	err = c.call(ctx, request{op: "upload image", method: http.MethodPost, path: "/open-apis/im/v1/images", body: body, contentType: ct}, &out)
	return out.ImageKey, err
}

// UploadFile uploads a file of at most MaxFileBytes and returns its
// file_key. durationMS is the length of audio and video (0 otherwise).
func (c *Client) UploadFile(ctx context.Context, name string, data []byte, durationMS int) (string, error) {
	if len(data) == 0 || len(data) > MaxFileBytes {
		return "", fmt.Errorf("feishu: the file %q has %d bytes; a file must have 1 byte to %d MiB: %w",
			name, len(data), MaxFileBytes>>20, errBadInput)
	}
	fields := map[string]string{"file_type": string(FileKindOf(name)), "file_name": filepath.Base(name)}
	if durationMS > 0 {
		fields["duration"] = fmt.Sprint(durationMS)
	}
	body, ct, err := multipartBody(fields, "file", name, data)
	if err != nil {
		return "", err
	}
	var out struct {
		FileKey string `json:"file_key"`
	}
	err = c.call(ctx, request{op: "upload file", method: http.MethodPost, path: "/open-apis/im/v1/files", body: body, contentType: ct}, &out)
	return out.FileKey, err
}

// Attachment uploads a file and returns the message that shows it: an
// image message for an image up to MaxImageBytes, a media message for an
// mp4, a file message otherwise.
func (c *Client) Attachment(ctx context.Context, name string, data []byte) (Message, error) {
	ct := http.DetectContentType(data)
	if strings.HasPrefix(ct, "image/") && len(data) <= MaxImageBytes {
		key, err := c.UploadImage(ctx, name, data)
		if err != nil {
			return Message{}, err
		}
		return ImageMessage(key), nil
	}
	key, err := c.UploadFile(ctx, name, data, 0)
	if err != nil {
		return Message{}, err
	}
	if FileKindOf(name) == FileMP4 {
		return MediaMessage(key), nil
	}
	return FileMessage(key), nil
}

func multipartBody(fields map[string]string, fileField, name string, data []byte) ([]byte, string, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range fields {
		if err := w.WriteField(k, v); err != nil {
			return nil, "", fmt.Errorf("feishu upload: %w", err)
		}
	}
	fw, err := w.CreateFormFile(fileField, filepath.Base(name))
	if err != nil {
		return nil, "", fmt.Errorf("feishu upload: %w", err)
	}
	if _, err := fw.Write(data); err != nil {
		return nil, "", fmt.Errorf("feishu upload: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, "", fmt.Errorf("feishu upload: %w", err)
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

// MaxDownloadBytes bounds a resource download (the platform serves at
// most 100 MB).
const MaxDownloadBytes = 100 << 20

// Download writes the resource key of message messageID (an image_key, or
// the file_key of a file, audio or video) to w, at most limit bytes
// (MaxDownloadBytes when limit <= 0), and returns its Content-Type.
func (c *Client) Download(ctx context.Context, messageID, key string, image bool, w io.Writer, limit int64) (string, error) {
	if limit <= 0 {
		limit = MaxDownloadBytes
	}
	typ := "file"
	if image {
		typ = "image"
	}
	tok, err := c.tenantToken(ctx)
	if err != nil {
		return "", err
	}
	u := c.base + "/open-apis/im/v1/messages/" + url.PathEscape(messageID) + "/resources/" + url.PathEscape(key) + "?type=" + typ
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("feishu download: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("feishu download: %w", err)
	}
	defer resp.Body.Close()
	ct := resp.Header.Get("Content-Type")
	if resp.StatusCode != http.StatusOK || strings.HasPrefix(ct, "application/json") {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxJSONResponse))
		var env envelope
		_ = json.Unmarshal(raw, &env)
		if tokenCode(env.Code) {
			c.dropToken(tok)
		}
		return "", &APIError{Op: "download resource", HTTPStatus: resp.StatusCode, Code: env.Code, Msg: env.Msg}
	}
	n, err := io.Copy(w, io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return "", fmt.Errorf("feishu download: %w", err)
	}
	if n > limit {
		return "", fmt.Errorf("feishu download: the resource is larger than %d bytes: %w", limit, errBadInput)
	}
	return ct, nil
}
