package workspace

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func TestSplitLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"a\n", []string{"a\n"}},
		{"a\nb", []string{"a\n", "b"}},
		{"\n\n", []string{"\n", "\n"}},
		{"a\r\nb\r\n", []string{"a\r\n", "b\r\n"}},
		{"é\n世界", []string{"é\n", "世界"}},
	}
	for _, tc := range tests {
		if got := SplitLines(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SplitLines(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := strings.Join(SplitLines(tc.in), ""); got != tc.in {
			t.Errorf("SplitLines(%q) joins to %q", tc.in, got)
		}
	}
}

// apply applies a diff to a and checks it is well formed.
func apply(t *testing.T, a, b []string, changes []Change) []string {
	t.Helper()
	var out []string
	at := 0
	for i, c := range changes {
		if c.A < at || c.Del < 0 || c.Ins < 0 || c.Del+c.Ins == 0 || c.A+c.Del > len(a) || c.B+c.Ins > len(b) {
			t.Fatalf("change %d %+v is out of order or range (a %d lines, b %d)", i, c, len(a), len(b))
		}
		out = append(out, a[at:c.A]...)
		if c.B != len(out) {
			t.Fatalf("change %d %+v: B is %d, want %d", i, c, c.B, len(out))
		}
		out = append(out, b[c.B:c.B+c.Ins]...)
		at = c.A + c.Del
	}
	return append(out, a[at:]...)
}

// lcs is the textbook O(NM) longest common subsequence length.
func lcs(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func randLines(r *rand.Rand, n int, alphabet string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = string(alphabet[r.IntN(len(alphabet))]) + "\n"
	}
	return out
}

// TestDiffIsMinimal checks, on many random texts, that a diff turns a into
// b and has the fewest edits (an O(NM) LCS is the oracle).
func TestDiffIsMinimal(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		a := randLines(r, r.IntN(30), "abc")
		b := randLines(r, r.IntN(30), "abcd"[:2+r.IntN(3)])
		if r.IntN(3) == 0 { // b an edit of a
			b = append(append(append([]string(nil), a[:len(a)/3]...), b[:len(b)/4]...), a[len(a)/2:]...)
		}
		changes := Diff(a, b)
		if got := apply(t, a, b, changes); !reflect.DeepEqual(got, b) && !(len(got) == 0 && len(b) == 0) {
			t.Fatalf("Diff(%q, %q) = %+v applies to %q", a, b, changes, got)
		}
		del, ins := Stat(changes)
		if want := len(a) + len(b) - 2*lcs(a, b); del+ins != want {
			t.Fatalf("Diff(%q, %q) = %+v has %d edits, want %d", a, b, changes, del+ins, want)
		}
	}
}

func TestDiffPastTheBoundIsStillCorrect(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	a := randLines(r, 3000, "abcdefghij")
	b := randLines(r, 3000, "abcdefghij")
	a[0], b[0] = "same\n", "same\n"
	changes := Diff(a, b)
	if got := apply(t, a, b, changes); !reflect.DeepEqual(got, b) {
		t.Fatal("the fallback diff does not turn a into b")
	}
	if len(changes) != 1 || changes[0].A != 1 || changes[0].Del != 2999 {
		t.Fatalf("changes = %+v, want the middle as one change after the equal head", changes)
	}
}

func TestDiffSimple(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want []Change
	}{
		{"", "", nil},
		{"a\n", "a\n", nil},
		{"", "a\nb\n", []Change{{A: 0, Del: 0, B: 0, Ins: 2}}},
		{"a\nb\n", "", []Change{{A: 0, Del: 2, B: 0, Ins: 0}}},
		{"a\nb\nc\n", "a\nB\nc\n", []Change{{A: 1, Del: 1, B: 1, Ins: 1}}},
		{"a\nb\nc\n", "a\nc\n", []Change{{A: 1, Del: 1, B: 1, Ins: 0}}},
		{"a\nc\n", "a\nb\nc\n", []Change{{A: 1, Del: 0, B: 1, Ins: 1}}},
		{"a\nb", "a\nb\n", []Change{{A: 1, Del: 1, B: 1, Ins: 1}}},
		{"x\na\ny\nb\nz\n", "x\nA\ny\nB\nz\n", []Change{{A: 1, Del: 1, B: 1, Ins: 1}, {A: 3, Del: 1, B: 3, Ins: 1}}},
	}
	for _, tc := range tests {
		if got := Diff(SplitLines(tc.a), SplitLines(tc.b)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Diff(%q, %q) = %+v, want %+v", tc.a, tc.b, got, tc.want)
		}
	}
}

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

func TestUnified(t *testing.T) {
	t.Parallel()
	all := DiffLimits{Context: 3}
	tests := []struct {
		name string
		a, b string
		lim  DiffLimits
		want string
		cut  bool
	}{
		{name: "no change", a: "a\n", b: "a\n", lim: all, want: ""},
		{
			name: "one line in the middle", a: numbered(1, 10), b: strings.Replace(numbered(1, 10), "5\n", "five\n", 1), lim: all,
			want: "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n",
		},
		{
			name: "first line, short context", a: "a\nb\nc\n", b: "A\nb\nc\n", lim: all,
			want: "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n-a\n+A\n b\n c\n",
		},
		{
			name: "insert into an empty file", a: "", b: "x\ny\n", lim: all,
			want: "--- a/f\n+++ b/f\n@@ -0,0 +1,2 @@\n+x\n+y\n",
		},
		{
			name: "delete everything", a: "x\n", b: "", lim: all,
			want: "--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-x\n",
		},
		{
			name: "pure insertion without context", a: "a\nb\n", b: "a\nb\nc\n", lim: DiffLimits{},
			want: "--- a/f\n+++ b/f\n@@ -2,0 +3 @@\n+c\n",
		},
		{
			name: "no newline at the end", a: "a\nb", b: "a\nc", lim: all,
			want: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n",
		},
		{
			name: "CRLF lines shown without CR", a: "a\r\nb\r\n", b: "a\r\nB\r\n", lim: all,
			want: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n",
		},
		{
			// Changes 6 equal lines apart share a hunk; 7 apart do not.
			name: "hunks join within twice the context",
			a:    numbered(1, 30),
			b:    numbered(1, 2) + "x3\n" + numbered(4, 9) + "x10\n" + numbered(11, 17) + "x18\n" + numbered(19, 30),
			lim:  all,
			want: "--- a/f\n+++ b/f\n@@ -1,13 +1,13 @@\n 1\n 2\n-3\n+x3\n 4\n 5\n 6\n 7\n 8\n 9\n-10\n+x10\n 11\n 12\n 13\n" +
				"@@ -15,7 +15,7 @@\n 15\n 16\n 17\n-18\n+x18\n 19\n 20\n 21\n",
		},
		{
			name: "line bound", a: numbered(1, 10), b: numbered(11, 20), lim: DiffLimits{Context: 3, MaxLines: 6},
			want: "--- a/f\n+++ b/f\n@@ -1,10 +1,10 @@\n-1\n-2\n-3\n", cut: true,
		},
		{
			name: "byte bound", a: numbered(1, 10), b: numbered(11, 20), lim: DiffLimits{Context: 3, MaxBytes: 40},
			want: "--- a/f\n+++ b/f\n@@ -1,10 +1,10 @@\n-1\n-2\n", cut: true,
		},
		{
			name: "long lines are clipped at a character", a: "é" + strings.Repeat("€", 10) + "\n", b: "x\n", lim: DiffLimits{MaxLineBytes: 4},
			want: "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-é…[30 more bytes]\n+x\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := SplitLines(tc.a), SplitLines(tc.b)
			got, cut := Unified("f", a, b, Diff(a, b), tc.lim)
			if got != tc.want || cut != tc.cut {
				t.Fatalf("Unified =\n%s(cut %v)\nwant\n%s(cut %v)", got, cut, tc.want, tc.cut)
			}
		})
	}
}
