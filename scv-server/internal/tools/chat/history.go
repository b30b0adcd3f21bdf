package chat

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/chatlog"
	"github.com/scv-cli/scv/shared/protocol"
)

//go:embed history.md
var historyDescription string

const historySchema = `{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["search", "episodes", "read"], "description": "search messages, list episodes, or read one episode."},
    "query": {"type": "string", "maxLength": 1000, "description": "search: the words every message found holds."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "search: results (default 10); episodes: episodes (default 20); read: messages (default 30)."},
    "before": {"type": "string", "description": "episodes: only those started before this date, YYYY-MM-DD."},
    "after": {"type": "string", "description": "episodes: only those started on or after this date, YYYY-MM-DD."},
    "episode": {"type": "string", "description": "read: the episode ID, as search and episodes give it."},
    "offset": {"type": "integer", "minimum": 0, "description": "read: the first message to show (default 0)."}
  },
  "required": ["action"],
  "additionalProperties": false
}`

// History is the chat_history tool of one session.
type History struct{ set *Set }

type historyArgs struct {
	Action  string `json:"action"`
	Query   string `json:"query"`
	Limit   int    `json:"limit"`
	Before  string `json:"before"`
	After   string `json:"after"`
	Episode string `json:"episode"`
	Offset  int    `json:"offset"`
}

// Spec describes the tool.
func (*History) Spec() tools.Spec {
	return tools.Spec{Name: HistoryName, Description: strings.TrimSpace(historyDescription), Schema: json.RawMessage(historySchema)}
}

// Prepare checks the action's arguments; the call is read-only.
func (h *History) Prepare(env tools.Env, raw json.RawMessage) (*tools.Plan, error) {
	var a historyArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("chat_history arguments: %w", err)
	}
	var summary string
	switch a.Action {
	case "search":
		if strings.TrimSpace(a.Query) == "" {
			return nil, fmt.Errorf("search needs a query: the words to find, such as {\"action\":\"search\",\"query\":\"blue door\"}")
		}
		summary = fmt.Sprintf("Search the chat log for %q", a.Query)
	case "episodes":
		for _, d := range []string{a.Before, a.After} {
			if d != "" {
				if _, err := chatlog.ParseDay(d); err != nil {
					return nil, err
				}
			}
		}
		summary = "List the chat log's episodes"
	case "read":
		if _, err := chatlog.ParseEpisodeID(a.Episode); err != nil {
			return nil, err
		}
		summary = "Read the chat log episode " + a.Episode
	}
	r := chatlog.NewReader(h.set.logDir, chatlog.ReaderOptions{Location: h.set.opts.Location})
	limit := env.OutputLimit
	return &tools.Plan{
		Risk:    protocol.RiskReadOnly,
		Summary: summary,
		Run: func(ctx context.Context) (tools.Result, error) {
			if err := ctx.Err(); err != nil {
				return tools.Result{}, err
			}
			out, cut, err := h.run(r, a, limit)
			if err != nil {
				return tools.Failed(err.Error()), nil
			}
			return tools.Result{Success: true, Output: out, Truncated: cut}, nil
		},
	}, nil
}

func (h *History) run(r *chatlog.Reader, a historyArgs, limit int) (string, bool, error) {
	switch a.Action {
	case "search":
		res, err := r.Search(chatlog.SearchQuery{Query: a.Query, Limit: a.Limit})
		if err != nil {
			return "", false, err
		}
		return fit(limit, len(res.Hits), func(n int) any {
			return chatlog.SearchResult{Hits: res.Hits[:n], More: res.More || n < len(res.Hits)}
		})
	case "episodes":
		res, err := r.Episodes(chatlog.EpisodesQuery{Before: a.Before, After: a.After, Limit: a.Limit})
		if err != nil {
			return "", false, err
		}
		return fit(limit, len(res.Episodes), func(n int) any {
			return chatlog.EpisodesResult{Episodes: res.Episodes[:n], More: res.More || n < len(res.Episodes)}
		})
	default:
		res, err := r.Read(a.Episode, a.Offset, a.Limit)
		if err != nil {
			return "", false, err
		}
		return fit(limit, len(res.Messages), func(n int) any {
			page := res
			page.Messages = res.Messages[:n]
			page.More = res.More || n < len(res.Messages)
			return page
		})
	}
}

// fit encodes the result with as many of its n list entries as fit in
// limit bytes (0: no limit), dropping entries from the end; cut says some
// were dropped.
func fit(limit, n int, result func(k int) any) (string, bool, error) {
	enc := func(k int) []byte {
		b, _ := json.Marshal(result(k))
		return b
	}
	if b := enc(n); limit <= 0 || len(b) <= limit {
		return string(b), false, nil
	}
	// The largest k whose encoding fits; k = 0 is sent even over the limit.
	k := sort.Search(n, func(k int) bool { return len(enc(k+1)) > limit })
	return string(enc(k)), true, nil
}
