package chatlog

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// benchLog writes a log of n messages in episodes of 1,000, directly (the
// writer's fsync per message would make the set-up the benchmark).
func benchLog(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	start := at("2026-01-05 08:00:00")
	var bw *bufio.Writer
	var f *os.File
	for i := range n {
		ti := start.Add(time.Duration(i) * time.Minute)
		if i%1000 == 0 {
			if f != nil {
				_ = bw.Flush()
				_ = f.Close()
			}
			p := filepath.Join(dir, NewEpisodeID(ti).Path())
			_ = os.MkdirAll(filepath.Dir(p), 0o700)
			var err error
			if f, err = os.Create(p); err != nil {
				b.Fatal(err)
			}
			bw = bufio.NewWriter(f)
		}
		text := fmt.Sprintf("message %d about the garden, the weather and what to cook tonight", i)
		if i%5000 == 0 {
			text += " blue door"
		}
		line, err := EncodeLine(Record{Message: Message{Time: ti, Who: Owner, Text: text}, Index: i % 1000})
		if err != nil {
			b.Fatal(err)
		}
		_, _ = bw.Write(line)
	}
	_ = bw.Flush()
	_ = f.Close()
	return dir
}

// BenchmarkSearch100k searches a log of 100,000 messages (about 12 MiB)
// for a phrase that 20 of them hold, reading the whole log.
func BenchmarkSearch100k(b *testing.B) {
	r := NewReader(benchLog(b, 100_000), ReaderOptions{})
	b.ResetTimer()
	for b.Loop() {
		res, err := r.Search(SearchQuery{Query: "Blue door", Limit: 100})
		if err != nil || len(res.Hits) != 20 {
			b.Fatalf("%d hits, %v", len(res.Hits), err)
		}
	}
}
