package proctag

import (
	"os"
	"runtime"
	"testing"
)

// BenchmarkFind scans every process's environment for a tag no process
// carries: the cost of one sweep round on this machine's process table.
func BenchmarkFind(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("/proc is Linux only")
	}
	b.ReportAllocs()
	for b.Loop() {
		if got := Find("bench-no-such-tag"); len(got) != 0 {
			b.Fatalf("found %v", got)
		}
	}
	b.ReportMetric(float64(len(AllPids())), "procs")
}

func BenchmarkReadStat(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("/proc is Linux only")
	}
	pid := os.Getpid()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := ReadStat(pid); !ok {
			b.Fatal("cannot read own stat")
		}
	}
}
