package sessionstore

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/shared/protocol"
)

// Kinds of replay items.
const (
	ItemUser      = "user"
	ItemAssistant = "assistant"
	ItemTool      = "tool"
	ItemNotice    = "notice"
)

// Texts of the notices a replay carries.
const (
	NoticeInterrupted = "This turn was interrupted: the server stopped before it ended. Tool calls without a result may or may not have run."
	NoticeCancelled   = "The turn was cancelled."
	NoticeCleared     = "The conversation was cleared here; earlier turns are not shown."
)

// MaxRecordBytes bounds one record of a log, a line. The largest records
// the server writes hold one model response (at most 4 MiB on the wire,
// where it is already JSON-escaped) or one tool result (at most 1 MiB,
// six times that with every byte escaped); the writer refuses a larger
// one, and a load refuses a longer line without reading it whole.
const MaxRecordBytes = 16 << 20

// loadWindow is how much of a log is read and decoded at a time, so that
// a log of any size is loaded in bounded memory (beyond the session it
// holds).
const loadWindow = 8 << 20

// load reads the log in f and replays it, a window of lines at a time. It
// returns the session with an open last turn repaired in memory, the
// records that make the repair durable, and the offset where the valid
// records end (a torn last line starts there).
func load(id, path string, f *os.File) (*Session, []*record, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, 0, fmt.Errorf("reading %s: %w", path, err)
	}
	r := &replayer{}
	lines := 0
	end, err := scanRecords(path, io.NewSectionReader(f, 0, fi.Size()), fi.Size(), func(recs []record, first int) error {
		for i := range recs {
			rec, line := &recs[i], first+i+1
			switch {
			case line == 1 && rec.T != recMeta:
				return &CorruptError{Path: path, Line: line, Err: errors.New("the first record is not the session's meta record")}
			case line == 1 && rec.ID != id:
				return &CorruptError{Path: path, Line: line, Err: fmt.Errorf("the meta record names session %q, not %q", rec.ID, id)}
			case line > 1 && rec.T == recMeta:
				return &CorruptError{Path: path, Line: line, Err: errors.New("a second meta record")}
			}
			if err := r.apply(rec); err != nil {
				return &CorruptError{Path: path, Line: line, Err: err}
			}
			lines = line
		}
		return nil
	})
	if err != nil {
		return nil, nil, 0, err
	}
	if lines == 0 {
		return nil, nil, 0, &CorruptError{Path: path, Line: 1, Err: errors.New("the log has no complete meta record")}
	}
	var repair []*record
	interrupted := ""
	if r.open != nil {
		interrupted = r.open.id
		repair = r.repairRecords()
		for _, rec := range repair {
			_ = r.apply(rec)
		}
	}
	s := &Session{
		Meta:        r.meta,
		History:     r.history,
		Usage:       r.usage,
		Turns:       r.turns,
		Title:       r.title,
		Updated:     fi.ModTime(),
		Bytes:       fi.Size(),
		Replay:      r.items,
		Interrupted: interrupted,
		Rules:       r.rules,
		Revoked:     r.revoked,
		Queue:       r.queue,
	}
	if s.Replay == nil {
		s.Replay = []protocol.ReplayItem{}
	}
	return s, repair, end, nil
}

// scanRecords reads whole lines of rd (size bytes, a hint), decodes them a
// window at a time and
// hands each window's records, in order, to apply with the number of lines
// before them. A last line without its newline is a torn write and is not
// decoded. A line longer than MaxRecordBytes is never held whole: a
// complete one makes the log corrupt, a torn one is ignored. It returns
// the offset after the last complete line.
func scanRecords(path string, rd io.Reader, size int64, apply func(recs []record, first int) error) (int64, error) {
	br := bufio.NewReaderSize(rd, 64<<10)
	var (
		// chunk holds complete lines, then the start of the current one;
		// sized for the whole log when it fits in a window.
		chunk     = make([]byte, 0, min(size, loadWindow+64<<10))
		lineStart int   // where the current line starts in chunk
		inChunk   int   // complete lines in chunk
		lines     int   // lines decoded and applied before chunk
		end       int64 // offset after the last complete line
	)
	flush := func() error {
		if inChunk == 0 {
			return nil
		}
		recs, err := decodeRecords(path, chunk[:lineStart], lines)
		if err != nil {
			return err
		}
		if err := apply(recs, lines); err != nil {
			return err
		}
		lines += inChunk
		inChunk = 0
		// The records hold copies of their strings: the buffer is reused.
		n := copy(chunk, chunk[lineStart:])
		chunk, lineStart = chunk[:n], 0
		return nil
	}
	for {
		piece, err := br.ReadSlice('\n')
		if len(chunk)-lineStart+len(piece) > MaxRecordBytes+1 {
			if err == nil || skipLine(br, rd) {
				return 0, &CorruptError{Path: path, Line: lines + inChunk + 1,
					Err: fmt.Errorf("the line is longer than the %d bytes a record may have", MaxRecordBytes)}
			}
			chunk = chunk[:lineStart] // a torn last line
			break
		}
		chunk = grow(chunk, len(piece), lineStart+MaxRecordBytes+1)
		chunk = append(chunk, piece...)
		switch {
		case err == nil:
			end += int64(len(chunk) - lineStart)
			inChunk++
			lineStart = len(chunk)
			if lineStart >= loadWindow {
				if err := flush(); err != nil {
					return 0, err
				}
			}
			continue
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			chunk = chunk[:lineStart] // a torn last line, or nothing
		default:
			return 0, fmt.Errorf("reading %s: %w", path, err)
		}
		break
	}
	return end, flush()
}

// grow makes room for n more bytes in b, doubling its capacity up to
// limit, so that a long line costs about twice its size in allocations,
// not a hundred small copies.
func grow(b []byte, n, limit int) []byte {
	if len(b)+n <= cap(b) {
		return b
	}
	c := make([]byte, len(b), max(min(2*cap(b), limit), len(b)+n, 64<<10))
	copy(c, b)
	return c
}

// skipLine discards the rest of the current line of br, which reads rd,
// and reports whether it ended with a newline (false: the input ended
// first). Nothing is read after it, so it reads rd directly, in large
// blocks.
func skipLine(br *bufio.Reader, rd io.Reader) bool {
	if buffered, _ := br.Peek(br.Buffered()); bytes.IndexByte(buffered, '\n') >= 0 {
		return true
	}
	block := make([]byte, 1<<20)
	for {
		n, err := rd.Read(block)
		if bytes.IndexByte(block[:n], '\n') >= 0 {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// parallelChunk is the least data worth a decoding goroutine of its own.
const parallelChunk = 512 << 10

// decodeRecords decodes data, whole lines of records that follow first
// earlier lines, in order. Chunks of lines are decoded in parallel, one
// goroutine each (joined before it returns), since decoding is nearly all
// the time a resume takes.
func decodeRecords(path string, data []byte, first int) ([]record, error) {
	n := min(runtime.GOMAXPROCS(0), 8, len(data)/parallelChunk+1)
	recs := make([]record, bytes.Count(data, []byte{'\n'}))
	type chunk struct {
		data  []byte
		first int // index of its first line
		err   error
	}
	chunks := make([]chunk, 0, n)
	line := 0
	for off := 0; off < len(data); {
		cut := len(data)
		if rest := n - len(chunks); rest > 1 {
			cut = off + (len(data)-off)/rest
			cut += bytes.IndexByte(data[cut:], '\n') + 1 // data ends with a newline
		}
		chunks = append(chunks, chunk{data: data[off:cut], first: line})
		line += bytes.Count(data[off:cut], []byte{'\n'})
		off = cut
	}
	var wg sync.WaitGroup
	for i := range chunks {
		c := &chunks[i]
		wg.Go(func() { c.err = decodeChunk(path, c.data, c.first, first, recs) })
	}
	wg.Wait()
	for _, c := range chunks {
		if c.err != nil {
			return nil, c.err
		}
	}
	return recs, nil
}

// decodeChunk decodes whole lines of records, each a JSON object on its
// own line, into recs from index at; the log has base lines before recs.
func decodeChunk(path string, data []byte, at, base int, recs []record) error {
	i := at
	for off := 0; off < len(data); i++ {
		nl := off + bytes.IndexByte(data[off:], '\n')
		if err := decodeRecord(data[off:nl], &recs[i]); err != nil {
			return &CorruptError{Path: path, Line: base + i + 1, Err: fmt.Errorf("the line is not a valid record: %v", err)}
		}
		off = nl + 1
	}
	return nil
}

// replayer rebuilds a session from its records.
type replayer struct {
	meta    Meta
	history []provider.Message
	usage   protocol.Usage
	turns   int
	title   string
	items   []protocol.ReplayItem
	// calls are tool calls of the transcript still waiting for a result.
	calls   []pendingCall
	open    *openTurn
	rules   []protocol.Rule
	revoked []string // rule keys revoked and not granted again since
	queue   []Queued
}

type openTurn struct {
	id     string
	server bool // started by the server (it has an origin)
	first  int  // index of the turn's first item
}

type pendingCall struct {
	id, name string
	args     json.RawMessage
}

func (r *replayer) apply(rec *record) error {
	switch rec.T {
	case recMeta:
		if rec.Cwd == "" {
			return errors.New("the meta record has no cwd")
		}
		created, _ := time.Parse(time.RFC3339Nano, rec.At)
		r.meta = Meta{ID: rec.ID, Cwd: rec.Cwd, Model: rec.Model, Created: created}
	case recTurn:
		if rec.Turn == "" {
			return errors.New("a turn record without a turn id")
		}
		r.interruptOpen()
		r.turns++
		r.open = &openTurn{id: rec.Turn, server: rec.Origin != nil, first: len(r.items)}
	case recMsg:
		if rec.Msg == nil {
			return errors.New("a msg record without a message")
		}
		r.message(rec)
	case recEnd:
		r.end(rec)
	case recClear:
		r.interruptOpen()
		r.history, r.usage, r.calls, r.rules, r.queue, r.revoked = nil, protocol.Usage{}, nil, nil, nil, nil
		r.items = []protocol.ReplayItem{{Kind: ItemNotice, Text: NoticeCleared}}
	case recCompact:
		if rec.From < 0 || rec.Removed < 0 || rec.From+rec.Removed > len(r.history) {
			return fmt.Errorf("a compact record replaces messages %d to %d of a history of %d", rec.From, rec.From+rec.Removed, len(r.history))
		}
		h := make([]provider.Message, 0, len(r.history)-rec.Removed+len(rec.Messages))
		h = append(h, r.history[:rec.From]...)
		h = append(h, rec.Messages...)
		r.history = append(h, r.history[rec.From+rec.Removed:]...)
		text := fmt.Sprintf("The context was compacted: %d earlier messages were replaced by a summary.", rec.Removed)
		if len(rec.Messages) == 0 {
			text = fmt.Sprintf("%d earlier messages were dropped to keep the history within its bounds.", rec.Removed)
		}
		r.items = append(r.items, protocol.ReplayItem{Kind: ItemNotice, TurnID: r.openID(), Text: text})
	case recResume:
		r.interruptOpen()
	case recQueue:
		r.queue = rec.Queue
	case recQueueAdd, recQueueUpdate, recQueueMove, recQueueRemove:
		if rec.Q == nil || rec.Q.QueueID == "" {
			return fmt.Errorf("a %s record without a queue entry", rec.T)
		}
		r.queueChange(rec)
	case recRule:
		if rec.Rule == nil || rec.Rule.Key == "" {
			return errors.New("a rule record without a rule key")
		}
		r.grant(*rec.Rule)
	case recUnrule:
		if rec.Rule == nil || rec.Rule.Key == "" {
			return errors.New("an unrule record without a rule key")
		}
		r.revoke(rec.Rule.Key)
	default:
		// A record type of a later format: skipped.
	}
	return nil
}

// queueChange applies one queue record. A change to an entry the queue
// does not hold (which the server never writes) is ignored: the queue is
// what the log's records leave, and the history does not depend on it.
func (r *replayer) queueChange(rec *record) {
	at := slices.IndexFunc(r.queue, func(q Queued) bool { return q.QueueID == rec.Q.QueueID })
	switch rec.T {
	case recQueueAdd:
		if at < 0 {
			r.queue = append(r.queue, *rec.Q)
		}
		return
	case recQueueRemove:
		if at >= 0 {
			r.queue = slices.Delete(r.queue, at, at+1)
		}
		return
	}
	if at < 0 {
		return
	}
	q := &r.queue[at]
	q.Revision = rec.Q.Revision
	switch rec.T {
	case recQueueUpdate:
		q.Prompt = rec.Q.Prompt
	case recQueueMove:
		moved := *q
		r.queue = slices.Delete(r.queue, at, at+1)
		to := len(r.queue)
		if rec.Before != "" {
			if i := slices.IndexFunc(r.queue, func(q Queued) bool { return q.QueueID == rec.Before }); i >= 0 {
				to = i
			}
		}
		r.queue = slices.Insert(r.queue, to, moved)
	}
}

// grant adds rule, replacing a rule with the same key.
// revoke drops the rule key and remembers that it was revoked, so a rule
// of the configuration with that key stays off in the resumed session.
func (r *replayer) revoke(key string) {
	r.rules = slices.DeleteFunc(r.rules, func(g protocol.Rule) bool { return g.Key == key })
	if !slices.Contains(r.revoked, key) {
		r.revoked = append(r.revoked, key)
	}
}

func (r *replayer) grant(rule protocol.Rule) {
	r.revoked = slices.DeleteFunc(r.revoked, func(k string) bool { return k == rule.Key })
	for i := range r.rules {
		if r.rules[i].Key == rule.Key {
			r.rules[i] = rule
			return
		}
	}
	r.rules = append(r.rules, rule)
}

func (r *replayer) openID() string {
	if r.open == nil {
		return ""
	}
	return r.open.id
}

func (r *replayer) message(rec *record) {
	m := *rec.Msg
	r.history = append(r.history, m)
	switch m.Role {
	case provider.RoleUser:
		kind := ItemUser
		if r.open != nil && r.open.server {
			kind = ItemNotice
		}
		r.items = append(r.items, protocol.ReplayItem{Kind: kind, TurnID: rec.Turn, Text: m.Content})
		if kind == ItemUser && r.title == "" {
			r.title = Title(m.Content)
		}
	case provider.RoleAssistant:
		if m.Content != "" {
			r.items = append(r.items, protocol.ReplayItem{Kind: ItemAssistant, TurnID: rec.Turn, Text: m.Content})
		}
		for _, c := range m.ToolCalls {
			r.calls = append(r.calls, pendingCall{id: c.ID, name: c.Name, args: c.ArgumentsJSON()})
		}
	case provider.RoleTool:
		item := protocol.ReplayItem{Kind: ItemTool, TurnID: rec.Turn, CallID: m.ToolCallID, Text: m.Content}
		for i, c := range r.calls {
			if c.id == m.ToolCallID {
				item.Name, item.Arguments = c.name, c.args
				r.calls = append(r.calls[:i:i], r.calls[i+1:]...)
				break
			}
		}
		switch {
		case rec.Synthetic:
			item.Interrupted = true
		case rec.Failed:
			item.Success = new(false)
			item.Text = strings.TrimPrefix(m.Content, "error: ")
		default:
			item.Success = new(true)
		}
		r.items = append(r.items, item)
	}
}

func (r *replayer) end(rec *record) {
	if rec.Usage != nil {
		r.usage.Add(*rec.Usage)
	}
	if r.open == nil || r.open.id != rec.Turn {
		return
	}
	switch rec.Outcome {
	case OutcomeInterrupted:
		for i := r.open.first; i < len(r.items); i++ {
			r.items[i].Interrupted = true
		}
		r.items = append(r.items, protocol.ReplayItem{Kind: ItemNotice, TurnID: rec.Turn, Text: NoticeInterrupted, Interrupted: true})
	case OutcomeCancelled:
		r.items = append(r.items, protocol.ReplayItem{Kind: ItemNotice, TurnID: rec.Turn, Text: NoticeCancelled})
	case OutcomeFailed:
		r.items = append(r.items, protocol.ReplayItem{Kind: ItemNotice, TurnID: rec.Turn,
			Text: fmt.Sprintf("The turn failed (%s): %s", rec.Code, rec.Message)})
	}
	// A turn's end leaves no call waiting: the agent loop answers every
	// call it records, and an interrupted turn got synthetic results.
	// Should a log say otherwise, the history is still made valid.
	for _, c := range openCalls(r.history) {
		r.history = append(r.history, provider.Message{Role: provider.RoleTool, ToolCallID: c.ID, Content: InterruptedResult})
	}
	r.calls = nil
	r.open = nil
}

// interruptOpen ends a turn left open (in memory) before the next record
// that cannot belong to it.
func (r *replayer) interruptOpen() {
	if r.open == nil {
		return
	}
	for _, rec := range r.repairRecords() {
		_ = r.apply(rec)
	}
}

// repairRecords are the records that end the open turn as interrupted: a
// synthetic result for each call of the history without one, then the end.
func (r *replayer) repairRecords() []*record {
	var recs []*record
	for _, c := range openCalls(r.history) {
		recs = append(recs, &record{T: recMsg, Turn: r.open.id, Failed: true, Synthetic: true,
			Msg: &provider.Message{Role: provider.RoleTool, ToolCallID: c.ID, Content: InterruptedResult}})
	}
	return append(recs, &record{T: recEnd, Turn: r.open.id, Outcome: OutcomeInterrupted, At: stamp(now())})
}

// openCalls returns the calls of the history's last assistant message that
// have no result after it.
func openCalls(history []provider.Message) []provider.ToolCall {
	i := len(history) - 1
	answered := map[string]int{}
	for ; i >= 0 && history[i].Role == provider.RoleTool; i-- {
		answered[history[i].ToolCallID]++
	}
	if i < 0 || history[i].Role != provider.RoleAssistant {
		return nil
	}
	var open []provider.ToolCall
	for _, c := range history[i].ToolCalls {
		if answered[c.ID] > 0 {
			answered[c.ID]--
			continue
		}
		open = append(open, c)
	}
	return open
}
