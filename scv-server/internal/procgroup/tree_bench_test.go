//go:build linux

package procgroup

import (
	"os"
	"testing"
)

// BenchmarkTreeScan is one full scan, as at a call's end: every
// process's stat, then the ancestry walk (docs/performance.md).
func BenchmarkTreeScan(b *testing.B) {
	t := newTree(os.Getpid(), serverChildren())
	defer t.close()
	b.ReportAllocs()
	var sc scanner
	b.ResetTimer()
	for range b.N {
		t.update(sc.snapshot())
	}
	b.ReportMetric(float64(len(snapshot())), "processes")
}

// BenchmarkTreeScanPartial is one scan of a running call's tree (a shell
// with a child here: the test process and its children), as the
// monitor does every 50 ms: only the tree's and the server's children's
// files.
func BenchmarkTreeScanPartial(b *testing.B) {
	t := newTree(os.Getpid(), serverChildren())
	defer t.close()
	var sc scanner
	t.update(sc.snapshot())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		t.update(sc.partial(t))
	}
	b.ReportMetric(float64(len(sc.snap)), "processes")
}
