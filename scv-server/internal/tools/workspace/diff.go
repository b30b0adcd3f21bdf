package workspace

import (
	"fmt"
	"strings"

	"github.com/scv-cli/scv/shared/textcut"
)

// SplitLines splits s after every "\n"; each line keeps its terminator
// ("\r\n" stays whole) and the last line may lack one. "" has no lines.
func SplitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := make([]string, 0, strings.Count(s, "\n")+1)
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// Change replaces the lines a[A:A+Del] of the old text by b[B:B+Ins] of
// the new one. A diff is a list of changes in order; the lines between
// them are equal.
type Change struct {
	A, Del, B, Ins int
}

// Stat sums the deleted and inserted lines of a diff.
func Stat(changes []Change) (del, ins int) {
	for _, c := range changes {
		del += c.Del
		ins += c.Ins
	}
	return del, ins
}

// maxDiffEdits bounds the work of one Diff: past this many line edits
// (after the common head and tail are set aside) the middle is reported as
// one change. The result is still a correct edit script, only not minimal;
// the bound keeps time O((N+M)·maxDiffEdits) and memory O(maxDiffEdits²).
const maxDiffEdits = 512

// Diff returns a line diff turning a into b: minimal (Myers' O(ND)
// algorithm) unless the texts differ by more than maxDiffEdits lines.
func Diff(a, b []string) []Change {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	a, b = a[pre:len(a)-suf], b[pre:len(b)-suf]
	switch {
	case len(a) == 0 && len(b) == 0:
		return nil
	case len(a) == 0 || len(b) == 0:
		return []Change{{A: pre, Del: len(a), B: pre, Ins: len(b)}}
	}
	// Compare small integers, not strings.
	ids := make(map[string]int32, len(a)+len(b))
	x, y := intern(a, ids), intern(b, ids)
	changes := myers(x, y)
	if changes == nil {
		changes = []Change{{Del: len(a), Ins: len(b)}}
	}
	for i := range changes {
		changes[i].A += pre
		changes[i].B += pre
	}
	return changes
}

func intern(lines []string, ids map[string]int32) []int32 {
	out := make([]int32, len(lines))
	for i, l := range lines {
		id, ok := ids[l]
		if !ok {
			id = int32(len(ids))
			ids[l] = id
		}
		out[i] = id
	}
	return out
}

// myers returns the shortest edit script of x → y as changes, or nil when
// it needs more than maxDiffEdits edits.
func myers(x, y []int32) []Change {
	n, m := len(x), len(y)
	maxD := min(n+m, maxDiffEdits)
	off := maxD + 1
	v := make([]int32, 2*maxD+3)
	// trace[d] holds v[-d-1 .. d+1] as it was before step d.
	var trace [][]int32
	for d := 0; d <= maxD; d++ {
		trace = append(trace, append([]int32(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var px int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				px = int(v[off+k+1])
			} else {
				px = int(v[off+k-1]) + 1
			}
			py := px - k
			for px < n && py < m && x[px] == y[py] {
				px++
				py++
			}
			v[off+k] = int32(px)
			if px >= n && py >= m {
				return backtrack(trace, n, m)
			}
		}
	}
	return nil
}

func backtrack(trace [][]int32, n, m int) []Change {
	var rev []Change // single-line edits, last first
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		v := trace[d]
		at := func(k int) int { return int(v[k+d+1]) }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1 // came down: an insertion
		} else {
			pk = k - 1 // came right: a deletion
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py { // the snake: equal lines
			x--
			y--
		}
		if pk == k+1 {
			rev = append(rev, Change{A: px, B: py, Ins: 1})
		} else {
			rev = append(rev, Change{A: px, B: py, Del: 1})
		}
		x, y = px, py
	}
	// Join adjacent single-line edits into changes.
	var out []Change
	for i := len(rev) - 1; i >= 0; i-- {
		e := rev[i]
		if len(out) > 0 {
			last := &out[len(out)-1]
			if last.A+last.Del == e.A && last.B+last.Ins == e.B {
				last.Del += e.Del
				last.Ins += e.Ins
				continue
			}
		}
		out = append(out, e)
	}
	return out
}

// DiffLimits bound a unified diff.
type DiffLimits struct {
	// Context is the number of equal lines around each change.
	Context int
	// MaxLines and MaxBytes bound the whole text; MaxLineBytes one line.
	MaxLines, MaxBytes, MaxLineBytes int
}

// Unified returns the unified diff of a → b for changes (from Diff), with
// "--- a/name" and "+++ b/name" headers, and whether it was cut at limits.
// Lines are shown without their terminators; a last line without one is
// followed by "\ No newline at end of file", as diff(1) does.
func Unified(name string, a, b []string, changes []Change, lim DiffLimits) (string, bool) {
	if len(changes) == 0 {
		return "", false
	}
	w := &limitedWriter{lim: lim}
	w.line("--- a/" + name)
	w.line("+++ b/" + name)
	ctx := lim.Context
	for i := 0; i < len(changes) && !w.full; {
		// A hunk takes every following change that starts within 2·ctx
		// equal lines of the previous one.
		j := i + 1
		for j < len(changes) && changes[j].A-(changes[j-1].A+changes[j-1].Del) <= 2*ctx {
			j++
		}
		first, last := changes[i], changes[j-1]
		aStart := max(0, first.A-ctx)
		aEnd := min(len(a), last.A+last.Del+ctx)
		bStart := first.B - (first.A - aStart)
		bEnd := last.B + last.Ins + (aEnd - (last.A + last.Del))
		w.line(fmt.Sprintf("@@ -%s +%s @@", hunkRange(aStart, aEnd-aStart), hunkRange(bStart, bEnd-bStart)))
		at := aStart
		for _, c := range changes[i:j] {
			w.lines(' ', a[at:c.A])
			w.lines('-', a[c.A:c.A+c.Del])
			w.lines('+', b[c.B:c.B+c.Ins])
			at = c.A + c.Del
		}
		w.lines(' ', a[at:aEnd])
		i = j
	}
	return w.b.String(), w.full
}

// hunkRange formats one side of a hunk header: 1-based start and count,
// the count left out when it is 1; an empty range names the line before it.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

type limitedWriter struct {
	lim   DiffLimits
	b     strings.Builder
	count int
	full  bool
}

func (w *limitedWriter) lines(prefix byte, ls []string) {
	for _, l := range ls {
		if w.full {
			return
		}
		text := strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
		w.line(string(prefix) + clipLine(text, w.lim.MaxLineBytes))
		if !strings.HasSuffix(l, "\n") {
			w.line(`\ No newline at end of file`)
		}
	}
}

func (w *limitedWriter) line(s string) {
	if w.full {
		return
	}
	if (w.lim.MaxLines > 0 && w.count >= w.lim.MaxLines) || (w.lim.MaxBytes > 0 && w.b.Len()+len(s)+1 > w.lim.MaxBytes) {
		w.full = true
		return
	}
	w.b.WriteString(s)
	w.b.WriteByte('\n')
	w.count++
}

// clipLine cuts s to at most n bytes on a character boundary, saying how
// much was left out.
func clipLine(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	kept := textcut.Prefix(s, n)
	return fmt.Sprintf("%s…[%d more bytes]", kept, len(s)-len(kept))
}

// PreviewLimits bound the diff shown with an approval request: enough to
// judge a change, small enough for any screen and frame.
var PreviewLimits = DiffLimits{Context: 3, MaxLines: 200, MaxBytes: 16 << 10, MaxLineBytes: 400}

// Preview is the unified diff of old → new for an approval request, cut at
// PreviewLimits with a last line saying so; "" when nothing changes.
func Preview(name, old, new string) string {
	a, b := SplitLines(old), SplitLines(new)
	diff, cut := Unified(name, a, b, Diff(a, b), PreviewLimits)
	if cut {
		diff += "[the diff goes on; the call's result shows the change]\n"
	}
	return diff
}
