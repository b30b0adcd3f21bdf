// Package complete is what the editor completes as the user types: the
// slash commands, and `@` mentions of workspace files, matched fuzzily. It
// also attaches the files a prompt mentions, so the model gets them as
// context without a read call.
package complete

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/scv-cli/scv/shared/statefile"
	"github.com/scv-cli/scv/shared/textcut"
)

// Command is a slash command and what it does, for the menu.
type Command struct {
	Name, Help string
}

// Commands are the TUI's slash commands, in the order the menu lists them.
var Commands = []Command{
	{"/clear", "clear the conversation"},
	{"/compact", "compact the context now"},
	{"/cost", "tokens and money so far"},
	{"/help", "keys and commands"},
	{"/init", "write a starting AGENTS.md"},
	{"/mcp", "the MCP servers and tools"},
	{"/model", "switch model or provider"},
	{"/quit", "quit"},
	{"/resume", "continue a stored session"},
	{"/revoke", "remove a session rule: /revoke KEY"},
	{"/rules", "list the session rules"},
}

// MatchCommands returns the commands that start with prefix ("/co": /compact,
// /cost); nil unless prefix starts with "/".
func MatchCommands(prefix string) []Command {
	if !strings.HasPrefix(prefix, "/") {
		return nil
	}
	var out []Command
	for _, c := range Commands {
		if strings.HasPrefix(c.Name, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// Limits of the file index: a workspace larger than this is still
// completed, from the files found first.
const (
	MaxFiles = 20000
	maxDepth = 12
)

// skipDirs are never walked: version control, dependencies and build
// output that nobody mentions and that would crowd out the real files.
var skipDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, "node_modules": true, "vendor": true,
	".venv": true, "venv": true, "__pycache__": true, "target": true, "dist": true, "build": true, ".cache": true, ".scv": true}

// Index lists the files of a workspace, relative to it, for @ mentions.
type Index struct {
	files []string
}

// NewIndex walks root (bounded by MaxFiles and a depth) without following
// symbolic links; unreadable directories are skipped.
func NewIndex(root string) *Index {
	ix := &Index{}
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		rel, rerr := filepath.Rel(root, path)
		if rerr != nil || rel == "." {
			return nil
		}
		if d.IsDir() {
			if skipDirs[d.Name()] || strings.Count(rel, string(filepath.Separator)) >= maxDepth {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			ix.files = append(ix.files, filepath.ToSlash(rel))
			if len(ix.files) >= MaxFiles {
				return fs.SkipAll
			}
		}
		return nil
	})
	sort.Strings(ix.files)
	return ix
}

// Len returns how many files the index holds.
func (ix *Index) Len() int { return len(ix.files) }

// Match returns at most n files matching query fuzzily (its characters in
// order, ignoring case), best first: a match in the file's name before one
// across directories, then shorter and tighter matches.
func (ix *Index) Match(query string, n int) []string {
	q := strings.ToLower(query)
	type hit struct {
		path  string
		score int
	}
	var hits []hit
	for _, f := range ix.files {
		if s, ok := score(strings.ToLower(f), q); ok {
			hits = append(hits, hit{f, s})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		if a.score != b.score {
			return a.score - b.score
		}
		return len(a.path) - len(b.path)
	})
	out := make([]string, 0, min(n, len(hits)))
	for _, h := range hits[:min(n, len(hits))] {
		out = append(out, h.path)
	}
	return out
}

// score is lower for better matches: the span the query's characters cover
// in path, with a bonus when they all fall in the file's own name and when
// the name starts with the query. ok is false when path does not match.
func score(path, q string) (int, bool) {
	if q == "" {
		return len(path), true
	}
	base := path[strings.LastIndexByte(path, '/')+1:]
	if strings.HasPrefix(base, q) {
		return 0, true
	}
	if i := strings.Index(path, q); i >= 0 {
		return 1 + len(path) - i, true
	}
	first, last, j := -1, -1, 0
	for i := 0; i < len(path) && j < len(q); i++ {
		if path[i] == q[j] {
			if first < 0 {
				first = i
			}
			last = i
			j++
		}
	}
	if j < len(q) {
		return 0, false
	}
	span := last - first
	if first < len(path)-len(base) {
		span += 1000 // part of the match is in the directories
	}
	return 100 + span, true
}

// Attachment limits: a file mentioned with @ is attached whole up to
// MaxFileBytes; the prompt with its attachments stays within maxTotal.
const MaxFileBytes = 64 << 10

// Attach appends to prompt the workspace files it mentions as `@path`, so
// the model has them as context. A mention that is not a regular text file
// inside root (missing, a directory, binary, a symbolic link leading
// outside) stays a plain mention, and notes says why; a file over
// MaxFileBytes is attached cut, with a line saying so. The result never
// passes maxTotal bytes: files that would not fit are left as mentions.
func Attach(root, prompt string, maxTotal int) (string, []string) {
	var b strings.Builder
	b.WriteString(prompt)
	var notes []string
	seen := map[string]bool{}
	for _, word := range strings.Fields(prompt) {
		if !strings.HasPrefix(word, "@") || len(word) < 2 {
			continue
		}
		rel := strings.TrimRight(word[1:], ".,;:!?)")
		if seen[rel] {
			continue
		}
		seen[rel] = true
		body, why := readMentioned(root, rel)
		if why != "" {
			notes = append(notes, "@"+rel+" was not attached: "+why)
			continue
		}
		block := "\n\n<attached path=\"" + rel + "\">\n" + body
		if !strings.HasSuffix(body, "\n") {
			block += "\n"
		}
		block += "</attached>"
		if b.Len()+len(block) > maxTotal {
			notes = append(notes, "@"+rel+" was not attached: the prompt would pass its size limit")
			continue
		}
		b.WriteString(block)
	}
	return b.String(), notes
}

// readMentioned reads a mentioned file, or says why it is not attached.
// The file is opened inside root, following symbolic links only while they
// stay inside it, never blocking on a FIFO (shared/statefile).
func readMentioned(root, rel string) (string, string) {
	if filepath.IsAbs(rel) {
		return "", "it is not inside the workspace"
	}
	f, err := statefile.Open(root, filepath.FromSlash(rel), os.O_RDONLY, 0, statefile.LinksInside)
	var notRegular *statefile.NotRegularError
	var outside *statefile.OutsideError
	switch {
	case errors.As(err, &outside):
		return "", "it leads outside the workspace"
	case errors.As(err, &notRegular):
		return "", "it is not a regular file"
	case errors.Is(err, fs.ErrNotExist):
		return "", "no such file in the workspace"
	case err != nil:
		return "", "it cannot be read"
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return "", "it cannot be read"
	}
	cut := len(data) > MaxFileBytes
	if cut {
		data = textcut.TrimPartialEnd(data[:MaxFileBytes])
	}
	if !utf8.Valid(data) || slices.Contains(data, 0) {
		return "", "it is not text"
	}
	text := string(data)
	if cut {
		text += "\n[cut at 64 KiB; read the file for the rest]"
	}
	return text, ""
}

// Shown is a prompt as the transcript shows it: each attached file's block
// becomes one line naming the file, so a prompt with a large attachment
// reads as what the user typed.
func Shown(prompt string) string {
	const open = "\n\n<attached path=\""
	i := strings.Index(prompt, open)
	if i < 0 {
		return prompt
	}
	var names []string
	rest := prompt[i:]
	for strings.HasPrefix(rest, open) {
		rest = rest[len(open):]
		q := strings.IndexByte(rest, '"')
		end := strings.Index(rest, "</attached>")
		if q < 0 || end < q {
			return prompt // not a block Attach wrote
		}
		names = append(names, rest[:q])
		rest = rest[end+len("</attached>"):]
	}
	if rest != "" {
		return prompt
	}
	return prompt[:i] + "\n[attached: " + strings.Join(names, ", ") + "]"
}
