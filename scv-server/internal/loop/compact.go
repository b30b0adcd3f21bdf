package loop

import (
	"context"
	"fmt"
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/scv-server/internal/tokens"
	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/shared/textcut"
)

// Compaction defaults.
const (
	// DefaultCompactShare is the share of the context window a request may
	// fill before the history is compacted.
	DefaultCompactShare = 0.8
	// DefaultKeepTurns is how many recent turns compaction keeps verbatim.
	DefaultKeepTurns = 2
)

// SummaryPrefix starts the message that stands for compacted history.
const SummaryPrefix = "[Summary of the earlier conversation: SCV compacted the messages it replaces to fit the model's context]"

// summarizerInstructions is the system prompt of a compaction request.
const summarizerInstructions = `You summarize the earlier part of a conversation between a user and SCV, a coding agent working in the user's workspace, so that the conversation can go on in a smaller context. Write a concise summary in plain text that keeps: the user's goals, constraints and preferences; decisions made and why; the files, commands and tools involved and what came of them (including errors); and what was left open or planned next. Keep exact names, paths, identifiers and numbers. When the request starts with a summary of an even earlier part, your summary replaces it: carry forward everything it holds that still matters, so that nothing from before is forgotten. Do not invent anything, and do not address the user. At most about 500 words.`

// earlierSummaryHeader introduces, in a compaction request, the summary an
// earlier compaction left.
const earlierSummaryHeader = "Summary of the conversation before the transcript below (carry forward what still matters):"

// maxRenderedResult bounds each tool result in the transcript a compaction
// summarizes; the model rarely needs more to remember what happened.
const maxRenderedResult = 4 << 10

// compaction is a finished compaction of the history.
type compaction struct {
	history []provider.Message
	removed int
}

// turnStarts returns the indices of the user messages of history: the
// first message of each turn (a summary counts as a turn).
func turnStarts(history []provider.Message) []int {
	var starts []int
	for i, m := range history {
		if m.Role == provider.RoleUser {
			starts = append(starts, i)
		}
	}
	return starts
}

// split returns the part of history older than its last keep turns.
func split(history []provider.Message, keep int) (old, recent []provider.Message) {
	if keep <= 0 {
		return history, nil
	}
	starts := turnStarts(history)
	if keep >= len(starts) {
		return nil, history
	}
	cut := starts[len(starts)-keep]
	return history[:cut], history[cut:]
}

// worthCompacting reports whether summarizing old can make room: a lone
// summary is not summarized again.
func worthCompacting(old []provider.Message) bool {
	if len(old) == 0 {
		return false
	}
	if len(old) == 1 && isSummary(old[0]) {
		return false
	}
	return true
}

// compact summarizes the part of history older than the last keep turns
// with the model and returns the new history: the summary, then the kept
// turns. It returns nil when there is nothing worth compacting.
func (l *loop) compact(ctx context.Context, history []provider.Message, keep int) (*compaction, error) {
	old, recent := split(history, keep)
	if !worthCompacting(old) {
		return nil, nil
	}
	tg := l.target()
	budget := tg.ContextMaxTokens / 2
	req := provider.Request{
		Model:    tg.Model,
		System:   summarizerInstructions,
		Messages: []provider.Message{{Role: provider.RoleUser, Content: renderForSummary(old, budget)}},
	}
	resp, err := tg.Provider.Stream(ctx, req, provider.HandlerFunc(func(string) error { return nil }))
	if err != nil {
		return nil, err
	}
	l.addUsage(resp.Usage)
	summary := strings.TrimSpace(resp.Content)
	if summary == "" {
		summary = "(the model returned an empty summary)"
	}
	out := make([]provider.Message, 0, 1+len(recent))
	out = append(out, provider.Message{Role: provider.RoleUser, Content: SummaryPrefix + "\n\n" + summary})
	out = append(out, recent...)
	return &compaction{history: out, removed: len(old)}, nil
}

// isSummary reports whether m is the message an earlier compaction left.
func isSummary(m provider.Message) bool {
	return m.Role == provider.RoleUser && strings.HasPrefix(m.Content, SummaryPrefix)
}

// renderForSummary writes the request of a compaction of old within about
// budget tokens. An earlier summary at the start of old (what the last
// compaction left) is not a transcript line to drop when the transcript is
// too long: it comes first, whole unless it alone takes more than half the
// budget, and the transcript after it gets the rest, losing its oldest
// lines first. So each summary carries the earlier ones forward, and a
// session that compacts again and again does not forget its beginning.
func renderForSummary(old []provider.Message, budget int64) string {
	if len(old) == 0 || !isSummary(old[0]) {
		return render(old, budget)
	}
	earlier := strings.TrimSpace(strings.TrimPrefix(old[0].Content, SummaryPrefix))
	if budget > 0 {
		whole := earlier
		for n := len(whole); tokens.Estimate(earlier) > budget/2 && n > 0; {
			n = n * 3 / 4
			earlier = clip(whole, n)
		}
		budget -= tokens.Estimate(earlier) + tokens.Estimate(earlierSummaryHeader)
		budget = max(budget, 1)
	}
	return earlierSummaryHeader + "\n\n" + earlier + "\n\n" + render(old[1:], budget)
}

// render writes messages as a plain transcript of at most budget tokens,
// dropping the oldest lines first.
func render(msgs []provider.Message, budget int64) string {
	lines := make([]string, 0, len(msgs))
	for _, m := range msgs {
		switch m.Role {
		case provider.RoleUser:
			lines = append(lines, "User: "+m.Content)
		case provider.RoleAssistant:
			if m.Content != "" {
				lines = append(lines, "Assistant: "+m.Content)
			}
			for _, c := range m.ToolCalls {
				lines = append(lines, fmt.Sprintf("Assistant called %s with %s", c.Name, clip(c.Arguments, maxRenderedResult)))
			}
		case provider.RoleTool:
			lines = append(lines, "Tool result: "+clip(m.Content, maxRenderedResult))
		}
	}
	var total int64
	first := len(lines)
	for first > 0 {
		n := tokens.Estimate(lines[first-1]) + 1
		if budget > 0 && total+n > budget {
			break
		}
		total += n
		first--
	}
	text := strings.Join(lines[first:], "\n\n")
	if first > 0 {
		text = fmt.Sprintf("[%d earlier entries omitted]\n\n", first) + text
	}
	return "Summarize this conversation:\n\n" + text
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return textcut.Prefix(s, n) + " …[cut]"
}

// estimate returns the estimated tokens of the next request: calibrated by
// the provider's report for the previous one when there is one.
func (l *loop) estimate(history []provider.Message) int64 {
	turn := l.out.Messages
	if l.calibrated {
		return l.calibTokens + tokens.Messages(turn[l.calibMsgs:])
	}
	if l.historyTokens < 0 {
		l.historyTokens = tokens.Messages(history)
	}
	return l.fixedTokens + l.historyTokens + tokens.Messages(turn)
}

// calibrate records the provider's input tokens for a request that held
// the first n messages of the turn.
func (l *loop) calibrate(u *provider.Usage, n int) {
	if u == nil || u.InputTokens <= 0 {
		return
	}
	l.calibrated, l.calibTokens, l.calibMsgs = true, u.InputTokens, n
}

// fit makes the next request fit: when it would pass the compaction share
// of the context window, the older history is summarized. It fails with
// context_limit when the request cannot fit the window at all.
func (l *loop) fit(ctx context.Context, history []provider.Message) ([]provider.Message, error) {
	limit := l.target().ContextMaxTokens
	if limit <= 0 {
		return history, nil
	}
	share := l.cfg.CompactShare
	if share <= 0 || share > 1 {
		share = DefaultCompactShare
	}
	before := l.estimate(history)
	if float64(before) <= share*float64(limit) {
		return history, nil
	}
	keep := l.cfg.KeepTurns
	if keep <= 0 {
		keep = DefaultKeepTurns
	}
	c, err := l.compact(ctx, history, keep)
	if err == nil && c == nil && keep > 0 {
		// The kept turns are all there is: summarize them too; the
		// current turn is never summarized.
		c, err = l.compact(ctx, history, 0)
	}
	if err != nil {
		return nil, err
	}
	if c != nil {
		history = c.history
		l.historyTokens = tokens.Messages(history)
		l.calibrated = false
		after := l.estimate(history)
		l.out.Compacted = true
		l.out.History = history
		if err := l.sink.Emit(ctx, &protocol.ContextCompacted{
			BeforeTokens: before, AfterTokens: after, RemovedMessages: int64(c.removed),
		}); err != nil {
			return nil, err
		}
		before = after
	}
	if before > limit {
		return nil, &Failure{Code: protocol.FailContextLimit, Message: fmt.Sprintf(
			"the conversation needs about %d tokens, more than the model's context of %d even after compaction; clear the session (session.clear) or start a new one",
			before, limit)}
	}
	return history, nil
}

// CanCompact reports whether Compact has anything to summarize: more than
// the last turn, and not just an earlier summary.
func CanCompact(history []provider.Message) bool {
	old, _ := split(history, 1)
	return worthCompacting(old)
}

// Compact summarizes history now, keeping its last turn, as session.compact
// asks. It returns the outcome of a turn that made no model step: Err is a
// *Failure when there is nothing to compact.
func Compact(ctx context.Context, cfg Config, history []provider.Message, sink Sink) Outcome {
	l := newLoop(cfg, sink)
	keep := min(max(cfg.KeepTurns, 1), DefaultKeepTurns)
	before := l.fixedTokens + tokens.Messages(history)
	c, err := l.compact(ctx, history, keep)
	if err == nil && c == nil && keep > 1 {
		c, err = l.compact(ctx, history, 1)
	}
	switch {
	case err != nil:
		l.out.Err = l.classify(ctx, err)
	case c == nil:
		// The session checks CanCompact first.
		l.out.Err = &Failure{Code: protocol.FailInternal, Message: "internal error: nothing to compact"}
	default:
		l.out.Compacted, l.out.History = true, c.history
		after := l.fixedTokens + tokens.Messages(c.history)
		if err := sink.Emit(ctx, &protocol.ContextCompacted{BeforeTokens: before, AfterTokens: after, RemovedMessages: int64(c.removed)}); err != nil {
			l.out.Err = l.classify(ctx, err)
		}
	}
	return l.out
}
