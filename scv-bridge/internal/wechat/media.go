package wechat

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/wechat/cdncrypt"
)

// Download fetches m from the CDN and decrypts it. Files larger than
// MaxMediaBytes are refused.
func (c *Client) Download(ctx context.Context, m *Media) ([]byte, error) {
	if m == nil || (m.QueryParam == "" && m.FullURL == "") {
		return nil, fmt.Errorf("wechat: the item has no media to download: %w", errBadInput)
	}
	if m.Key == nil {
		return nil, fmt.Errorf("wechat: the media cannot be decrypted: %s: %w", m.KeyErr, errBadInput)
	}
	u := m.FullURL
	if u == "" {
		u = c.opts.CDNURL + "/download?encrypted_query_param=" + url.QueryEscape(m.QueryParam)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("wechat media download: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("wechat media download: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &APIError{Op: "media download", HTTPStatus: resp.StatusCode, Msg: resp.Header.Get("x-error-message")}
	}
	// +16: the padding of a file exactly at the cap.
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxMediaBytes+17))
	if err != nil {
		return nil, fmt.Errorf("wechat media download: %w", err)
	}
	if int64(len(data)) > c.opts.MaxMediaBytes+16 {
		return nil, fmt.Errorf("wechat: the media is larger than %d MiB, the limit: %w", c.opts.MaxMediaBytes>>20, errBadInput)
	}
	plain, err := cdncrypt.Decrypt(m.Key, data)
	if err != nil {
		return nil, fmt.Errorf("wechat media download: %w", err)
	}
	return plain, nil
}

// OutMedia is a file to send.
type OutMedia struct {
	Peer     string
	ClientID string // the outbox row id
	Class    Class
	// Kind is KindImage, KindVideo or KindFile.
	Kind Kind
	// Name is the file name shown for a file.
	Name string
	Data []byte
}

// SendMedia encrypts m.Data under a fresh key, uploads it through
// getuploadurl and the CDN, and sends it as one message. It returns
// ErrOverBudget when the budget grants no send now (hold it), and
// ErrThrottled as SendText does.
func (c *Client) SendMedia(ctx context.Context, m OutMedia) error {
	mediaType := map[Kind]int{KindImage: 1, KindVideo: 2, KindFile: 3}[m.Kind]
	switch {
	case mediaType == 0:
		return fmt.Errorf("wechat: cannot send a %q; send an image, a video or a file: %w", m.Kind, errBadInput)
	case len(m.Data) == 0:
		return fmt.Errorf("wechat: %s is empty; WeChat does not take empty files: %w", m.Name, errBadInput)
	case int64(len(m.Data)) > c.opts.MaxMediaBytes:
		return fmt.Errorf("wechat: %s is larger than %d MiB, the limit: %w", m.Name, c.opts.MaxMediaBytes>>20, errBadInput)
	}
	n, err := c.budget.Grant(m.Peer, m.Class, 1)
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrOverBudget
	}
	key := make([]byte, cdncrypt.KeySize)
	fk := make([]byte, 16)
	_, _ = rand.Read(key)
	_, _ = rand.Read(fk)
	cipher, err := cdncrypt.Encrypt(key, m.Data)
	if err != nil {
		return err
	}
	dl, err := c.upload(ctx, m, mediaType, hex.EncodeToString(fk), key, cipher)
	if err != nil {
		return err
	}
	media := map[string]any{"encrypt_query_param": dl, "aes_key": cdncrypt.KeyForSend(key), "encrypt_type": 1}
	var item sendItem
	switch m.Kind {
	case KindImage:
		item = sendItem{"type": 2, "image_item": map[string]any{"media": media, "mid_size": len(cipher)}}
	case KindVideo:
		item = sendItem{"type": 5, "video_item": map[string]any{"media": media, "video_size": len(cipher)}}
	default:
		item = sendItem{"type": 4, "file_item": map[string]any{"media": media, "file_name": m.Name, "len": strconv.Itoa(len(m.Data))}}
	}
	return c.send(ctx, m.Peer, m.ClientID, m.Class, item)
}

// ErrOverBudget is a send the budget does not allow now: hold it.
var ErrOverBudget = errors.New("the send budget for this conversation is used up until the peer writes again")

// upload asks for an upload URL and posts the ciphertext, retrying server
// errors up to 3 times; it returns the download parameter.
func (c *Client) upload(ctx context.Context, m OutMedia, mediaType int, fileKey string, key, cipher []byte) (string, error) {
	sum := md5.Sum(m.Data)
	var up struct {
		Param   string `json:"upload_param"`
		FullURL string `json:"upload_full_url"`
	}
	err := c.post(ctx, "getuploadurl", "/ilink/bot/getuploadurl", map[string]any{
		"filekey": fileKey, "media_type": mediaType, "to_user_id": m.Peer, "rawsize": len(m.Data),
		"rawfilemd5": hex.EncodeToString(sum[:]), "filesize": cdncrypt.PaddedSize(int64(len(m.Data))),
		"no_need_thumb": true, "aeskey": hex.EncodeToString(key), "base_info": newBaseInfo(),
	}, &up)
	if err != nil {
		return "", err
	}
	u := up.FullURL
	if u == "" {
		if up.Param == "" {
			return "", &APIError{Op: "getuploadurl", HTTPStatus: http.StatusOK, Msg: "no upload_param in the answer"}
		}
		u = c.opts.CDNURL + "/upload?encrypted_query_param=" + url.QueryEscape(up.Param) + "&filekey=" + url.QueryEscape(fileKey)
	}
	wait := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		dl, err := c.postCDN(ctx, u, cipher)
		var ae *APIError
		if err == nil || attempt > 3 || (errors.As(err, &ae) && ae.HTTPStatus < 500) || ctx.Err() != nil {
			return dl, err
		}
		c.log.Warn("wechat: CDN upload failed; retrying", "err", err, "attempt", attempt)
		if !sleep(ctx, wait) {
			return "", ctx.Err()
		}
		wait *= 2
	}
}

func (c *Client) postCDN(ctx context.Context, u string, body []byte) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("wechat CDN upload: %w", err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("wechat CDN upload: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return "", &APIError{Op: "CDN upload", HTTPStatus: resp.StatusCode, Msg: resp.Header.Get("x-error-message")}
	}
	dl := resp.Header.Get("x-encrypted-param")
	if dl == "" {
		return "", &APIError{Op: "CDN upload", HTTPStatus: resp.StatusCode, Msg: "no x-encrypted-param in the answer"}
	}
	return dl, nil
}

// MediaKindOf says how a file to send is shown, from the kind chat_attach
// recorded ("image", "video", "file"; "" to guess from the content): an
// image as an image, an mp4 video as a video (the video message plays
// mp4), anything else as a file.
func MediaKindOf(kind, name string, data []byte) Kind {
	if kind == "" && strings.HasPrefix(http.DetectContentType(data), "image/") {
		kind = "image"
	}
	switch {
	case kind == "image":
		return KindImage
	case kind == "video" && strings.EqualFold(filepath.Ext(name), ".mp4"):
		return KindVideo
	}
	return KindFile
}
