package feishutest

import (
	"encoding/json"
	"net/http"
	"time"
)

// Card is a CardKit card entity as the fake keeps it.
type Card struct {
	ID        string
	Sequence  int
	Text      string   // the text of the markdown element "main"
	Streaming bool     // streaming_mode
	Updates   []string // every text pushed, in order
	ops       []time.Time
}

// Card error codes of the fake.
const (
	codeCardSequence = 300317 // sequence not greater than the last one
	codeCardLimit    = 230020
	codeCardBuild    = 230099
	codeCardNotFound = 300303
)

// Cards returns a copy of card id, or nil.
func (s *Server) Card(id string) *Card {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cards[id]
	if !ok {
		return nil
	}
	cp := *c
	cp.Updates = append([]string(nil), c.Updates...)
	return &cp
}

type cardJSON struct {
	Config struct {
		StreamingMode bool `json:"streaming_mode"`
	} `json:"config"`
	Body struct {
		Elements []struct {
			Tag       string `json:"tag"`
			ElementID string `json:"element_id"`
			Content   string `json:"content"`
		} `json:"elements"`
	} `json:"body"`
}

func (c *Card) load(data string) bool {
	var cj cardJSON
	if json.Unmarshal([]byte(data), &cj) != nil {
		return false
	}
	c.Streaming = cj.Config.StreamingMode
	for _, el := range cj.Body.Elements {
		if el.ElementID == "main" {
			c.Text = el.Content
		}
	}
	return true
}

func (s *Server) createCard(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Type string `json:"type"`
		Data string `json:"data"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &Card{}
	if s.failCardCreate || req.Type != "card_json" || !c.load(req.Data) {
		reply(w, http.StatusBadRequest, codeCardBuild, "card build failed", nil)
		return
	}
	c.ID = s.id("card")
	s.cards[c.ID] = c
	reply(w, http.StatusOK, 0, "success", map[string]string{"card_id": c.ID})
}

// cardOp finds the card and checks the sequence and the per-card rate;
// on failure it has answered and returns nil. The caller holds s.mu.
func (s *Server) cardOp(w http.ResponseWriter, id string, seq int) *Card {
	c := s.cards[id]
	if c == nil {
		reply(w, http.StatusBadRequest, codeCardNotFound, "card not found", nil)
		return nil
	}
	now := time.Now()
	var recent []time.Time
	for _, t := range c.ops {
		if now.Sub(t) < time.Second {
			recent = append(recent, t)
		}
	}
	c.ops = recent
	if len(recent) >= s.cardOpsPerSec {
		s.cardLimited++
		reply(w, http.StatusBadRequest, codeCardLimit, "card operations are too frequent", nil)
		return nil
	}
	c.ops = append(c.ops, now)
	if seq <= c.Sequence {
		reply(w, http.StatusBadRequest, codeCardSequence, "sequence number compare failed", nil)
		return nil
	}
	c.Sequence = seq
	return c
}

// cardCall decodes a card operation's body into req (which has a
// sequence), checks the card, the rate and the sequence, and lets apply
// change the card; apply answers an error itself and returns false.
func (s *Server) cardCall(w http.ResponseWriter, r *http.Request, req interface{ seq() int }, apply func(*Card) bool) {
	_ = json.NewDecoder(r.Body).Decode(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cardOp(w, r.PathValue("id"), req.seq())
	if c != nil && apply(c) {
		reply(w, http.StatusOK, 0, "success", nil)
	}
}

type sequenced struct {
	Sequence int `json:"sequence"`
}

func (q *sequenced) seq() int { return q.Sequence }

func (s *Server) cardContent(w http.ResponseWriter, r *http.Request) {
	var req struct {
		sequenced
		Content string `json:"content"`
	}
	s.cardCall(w, r, &req, func(c *Card) bool {
		if r.PathValue("eid") != "main" || !c.Streaming {
			reply(w, http.StatusBadRequest, 300309, "the card is not streaming or has no such element", nil)
			return false
		}
		c.Text = req.Content
		c.Updates = append(c.Updates, req.Content)
		return true
	})
}

func (s *Server) cardUpdate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		sequenced
		Card struct {
			Type string `json:"type"`
			Data string `json:"data"`
		} `json:"card"`
	}
	s.cardCall(w, r, &req, func(c *Card) bool {
		if req.Card.Type != "card_json" || !c.load(req.Card.Data) {
			reply(w, http.StatusBadRequest, codeCardBuild, "card build failed", nil)
			return false
		}
		return true
	})
}

func (s *Server) cardSettings(w http.ResponseWriter, r *http.Request) {
	var req struct {
		sequenced
		Settings string `json:"settings"`
	}
	s.cardCall(w, r, &req, func(c *Card) bool {
		var st cardJSON
		if json.Unmarshal([]byte(req.Settings), &st) != nil {
			reply(w, http.StatusBadRequest, 230001, "settings are not JSON", nil)
			return false
		}
		c.Streaming = st.Config.StreamingMode
		return true
	})
}

// SetCardOpsPerSecond sets how many operations one card takes in a second
// before the fake answers 230020 (the platform's limit is 10).
func (s *Server) SetCardOpsPerSecond(n int) { s.mu.Lock(); s.cardOpsPerSec = n; s.mu.Unlock() }

// CardRateLimited counts the card operations refused for their rate.
func (s *Server) CardRateLimited() int { s.mu.Lock(); defer s.mu.Unlock(); return s.cardLimited }
