package wechat

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/wechat/cdncrypt"
)

// Kind is the kind of a message item.
type Kind string

// Item kinds (the API's item types 1-5).
const (
	KindText    Kind = "text"
	KindImage   Kind = "image"
	KindVoice   Kind = "voice"
	KindFile    Kind = "file"
	KindVideo   Kind = "video"
	KindUnknown Kind = "unknown"
)

// Message types.
const (
	fromUser = 1
	fromBot  = 2
)

// Media locates an encrypted file on the CDN.
type Media struct {
	// QueryParam is encrypt_query_param, the download parameter.
	QueryParam string
	// FullURL is full_url when the platform gave one; preferred.
	FullURL string
	// Key is the AES-128 key, nil when the message carried none usable
	// (KeyErr says why).
	Key    []byte
	KeyErr string
}

// Item is one part of a message.
type Item struct {
	Kind Kind
	// Text is the text of a text item, or WeChat's transcript of a voice
	// item ("" when WeChat made none).
	Text string
	// Media is the file of an image, voice, file or video item.
	Media *Media
	// FileName and Size describe a file item (Size also a video's).
	FileName string
	Size     int64
	// Duration is a voice item's length.
	Duration time.Duration
	// RawType is the API's item type, kept for unknown kinds.
	RawType int
}

// Quote is a quoted earlier message.
type Quote struct {
	Title string
	Item  *Item
}

// Message is one inbound message.
type Message struct {
	Seq          int64
	ID           string // message_id, the dedup key
	From, To     string
	ClientID     string
	Created      time.Time
	SessionID    string
	GroupID      string
	ContextToken string
	FromBot      bool
	Items        []Item
	Quote        *Quote
}

// Text joins the message's text items and voice transcripts.
func (m Message) Text() string {
	var parts []string
	for _, it := range m.Items {
		if (it.Kind == KindText || it.Kind == KindVoice) && it.Text != "" {
			parts = append(parts, it.Text)
		}
	}
	return strings.Join(parts, "\n")
}

type wireMedia struct {
	Param   string `json:"encrypt_query_param"`
	AESKey  string `json:"aes_key"`
	FullURL string `json:"full_url"`
}

type wireItem struct {
	Type int `json:"type"`
	Text *struct {
		Text string `json:"text"`
	} `json:"text_item"`
	Image *struct {
		Media  wireMedia `json:"media"`
		AESKey string    `json:"aeskey"`
	} `json:"image_item"`
	Voice *struct {
		Media    wireMedia `json:"media"`
		PlayTime int64     `json:"playtime"`
		Text     string    `json:"text"`
	} `json:"voice_item"`
	File *struct {
		Media    wireMedia       `json:"media"`
		FileName string          `json:"file_name"`
		Len      json.RawMessage `json:"len"`
	} `json:"file_item"`
	Video *struct {
		Media     wireMedia `json:"media"`
		VideoSize int64     `json:"video_size"`
	} `json:"video_item"`
}

type wireMessage struct {
	Seq          int64           `json:"seq"`
	MessageID    json.RawMessage `json:"message_id"`
	From         string          `json:"from_user_id"`
	To           string          `json:"to_user_id"`
	ClientID     string          `json:"client_id"`
	CreateTimeMS int64           `json:"create_time_ms"`
	SessionID    string          `json:"session_id"`
	GroupID      string          `json:"group_id"`
	MessageType  int             `json:"message_type"`
	ContextToken string          `json:"context_token"`
	Items        []wireItem      `json:"item_list"`
	Ref          *struct {
		Title string    `json:"title"`
		Item  *wireItem `json:"message_item"`
	} `json:"ref_msg"`
}

// DecodeMessage decodes one element of getupdates' msgs.
func DecodeMessage(raw []byte) (Message, error) {
	var w wireMessage
	if err := json.Unmarshal(raw, &w); err != nil {
		return Message{}, fmt.Errorf("wechat: a message is not valid JSON: %w", err)
	}
	id := strings.Trim(string(w.MessageID), `"`)
	if id == "" || id == "null" {
		return Message{}, fmt.Errorf("wechat: a message has no message_id")
	}
	m := Message{Seq: w.Seq, ID: id, From: w.From, To: w.To, ClientID: w.ClientID, SessionID: w.SessionID,
		GroupID: w.GroupID, ContextToken: w.ContextToken, FromBot: w.MessageType == fromBot}
	if w.CreateTimeMS > 0 {
		m.Created = time.UnixMilli(w.CreateTimeMS).UTC()
	}
	for _, wi := range w.Items {
		m.Items = append(m.Items, decodeItem(wi))
	}
	if w.Ref != nil {
		q := &Quote{Title: w.Ref.Title}
		if w.Ref.Item != nil {
			it := decodeItem(*w.Ref.Item)
			q.Item = &it
		}
		m.Quote = q
	}
	return m, nil
}

func decodeItem(w wireItem) Item {
	it := Item{Kind: KindUnknown, RawType: w.Type}
	switch {
	case w.Type == 1 && w.Text != nil:
		it.Kind, it.Text = KindText, w.Text.Text
	case w.Type == 2 && w.Image != nil:
		it.Kind, it.Media = KindImage, decodeMedia(w.Image.Media, w.Image.AESKey)
	case w.Type == 3 && w.Voice != nil:
		it.Kind, it.Text, it.Media = KindVoice, w.Voice.Text, decodeMedia(w.Voice.Media, "")
		it.Duration = time.Duration(w.Voice.PlayTime) * time.Millisecond
	case w.Type == 4 && w.File != nil:
		it.Kind, it.FileName, it.Media = KindFile, w.File.FileName, decodeMedia(w.File.Media, "")
		// len is a decimal string on the wire; accept a number too.
		it.Size, _ = strconv.ParseInt(strings.Trim(string(w.File.Len), `"`), 10, 64)
	case w.Type == 5 && w.Video != nil:
		it.Kind, it.Size, it.Media = KindVideo, w.Video.VideoSize, decodeMedia(w.Video.Media, "")
	}
	return it
}

// decodeMedia prefers the hex key an image item carries beside its media,
// then media.aes_key in either base64 form.
func decodeMedia(w wireMedia, hexKey string) *Media {
	m := &Media{QueryParam: w.Param, FullURL: w.FullURL}
	var lastErr error
	for _, s := range []string{hexKey, w.AESKey} {
		if s == "" {
			continue
		}
		k, err := cdncrypt.ParseKey(s)
		if err == nil {
			m.Key = k
			return m
		}
		lastErr = err
	}
	if lastErr != nil {
		m.KeyErr = lastErr.Error()
	} else {
		m.KeyErr = "the message carried no media key"
	}
	return m
}
