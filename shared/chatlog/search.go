package chatlog

import (
	"bytes"
	"errors"
	"strings"

	"github.com/scv-cli/scv/shared/textcut"
)

// SearchQuery is a search: every word of Query, ignoring case; Limit is
// at most MaxSearchLimit, 0 for DefaultSearchLimit.
type SearchQuery struct {
	Query string
	Limit int
}

// Hit is one message found.
type Hit struct {
	Episode string `json:"episode"`
	Index   int    `json:"index"`
	Time    string `json:"time"`
	Who     Who    `json:"who"`
	Excerpt string `json:"excerpt"`
}

// SearchResult lists the messages found, newest first. More says the
// search stopped before the beginning of the log: at its limit, or at the
// read bound.
type SearchResult struct {
	Hits []Hit `json:"results"`
	More bool  `json:"more"`
}

// Search finds the messages containing every word of q.Query in their
// text, quoted text, file names or transcript, newest first. It reads at
// most the reader's bound (64 MiB) of the log.
func (r *Reader) Search(q SearchQuery) (SearchResult, error) {
	words := strings.Fields(strings.ToLower(q.Query))
	if len(words) == 0 {
		return SearchResult{}, errors.New("the query is empty; give one or more words to find")
	}
	limit := clampLimit(q.Limit, DefaultSearchLimit, MaxSearchLimit)
	ids, err := r.list()
	if err != nil {
		return SearchResult{}, err
	}
	res := SearchResult{Hits: []Hit{}}
	pre := prefilter(words)
	budget := r.max
	for i, id := range ids {
		if budget <= 0 {
			res.More = true
			break
		}
		data, partial, err := r.readEpisode(id, budget, true)
		if err != nil {
			return res, err
		}
		budget -= int64(len(data))
		full := false
		// Lower-case the episode once for the prefilter; when that changes
		// its length (rare Unicode), positions do not carry over and the
		// prefilter is skipped.
		var low []byte
		if pre != nil {
			if low = bytes.ToLower(data); len(low) != len(data) {
				low = nil
			}
		}
		eachLineSpanBack(data, func(start, end int) bool {
			if len(res.Hits) == limit {
				full = true
				return false
			}
			if low != nil && !pre(low[start:end]) {
				return true
			}
			line := data[start:end]
			rec, err := DecodeLine(line)
			if err != nil || rec.End != "" {
				return true
			}
			if ex, ok := match(rec.Message, words); ok {
				res.Hits = append(res.Hits, Hit{Episode: id.String(), Index: rec.Index, Time: r.show(rec.Time), Who: rec.Who, Excerpt: ex})
			}
			return true
		})
		if full || partial || (len(res.Hits) == limit && i < len(ids)-1) {
			res.More = true
			break
		}
	}
	return res, nil
}

// prefilter returns a cheap test of a lower-cased raw line that every
// match passes: each word appears in it. Nil when a word has a character
// JSON escapes, so it may not appear in the line as is.
func prefilter(words []string) func([]byte) bool {
	bw := make([][]byte, len(words))
	for i, w := range words {
		if strings.ContainsAny(w, "\"\\<>&\u2028\u2029") {
			return nil
		}
		for _, c := range w {
			if c < 0x20 {
				return nil
			}
		}
		bw[i] = []byte(w)
	}
	return func(low []byte) bool {
		for _, w := range bw {
			if !bytes.Contains(low, w) {
				return false
			}
		}
		return true
	}
}

// match reports whether every word is in m's searchable text, with an
// excerpt around the first word.
func match(m Message, words []string) (string, bool) {
	fields := []string{m.Text, m.Quote, m.Transcript}
	for _, f := range m.Files {
		fields = append(fields, f.Name)
	}
	lows := make([]string, len(fields))
	for i, f := range fields {
		lows[i] = strings.ToLower(f)
	}
	all := strings.Join(lows, "\n")
	for _, w := range words {
		if !strings.Contains(all, w) {
			return "", false
		}
	}
	for i, low := range lows {
		if j := strings.Index(low, words[0]); j >= 0 {
			return excerpt(fields[i], low, j), true
		}
	}
	// The words only meet across fields: show the text's start.
	return excerpt(fields[0], lows[0], 0), true
}

// excerpt shows s around byte j of its lower-cased form low.
func excerpt(s, low string, j int) string {
	if len(low) != len(s) {
		j = 0 // lower-casing changed the length: positions do not carry over
	}
	before := textcut.Suffix(s[:j], excerptBefore)
	after := textcut.Prefix(s[j:], excerptAfter)
	out := strings.Join(strings.Fields(before+after), " ")
	if len(before) < j {
		out = "…" + out
	}
	if len(after) < len(s)-j {
		out += "…"
	}
	return out
}
