package records

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkList reads 100 records, what `scv agents ps` and a reconcile
// pass do first.
func BenchmarkList(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("process identity is read from /proc")
	}
	home := b.TempDir()
	self, err := Self()
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		if err := Write(home, Record{Handle: fmt.Sprintf("codex-%06x", i), Agent: "codex", Owner: self, Cwd: "/work/p"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		recs, err := List(home)
		if err != nil || len(recs) != 100 {
			b.Fatalf("List = %d, %v", len(recs), err)
		}
	}
}

// BenchmarkWrite is one atomic record write (temporary file, fsync,
// rename, directory fsync).
func BenchmarkWrite(b *testing.B) {
	home := b.TempDir()
	r := Record{Handle: "codex-3f9a2c", Agent: "codex", Owner: Process{PID: 1, StartTime: 2}}
	b.ReportAllocs()
	for b.Loop() {
		if err := Write(home, r); err != nil {
			b.Fatal(err)
		}
	}
}
