package client

import (
	"os"
	"testing"
	"time"
)

func TestDbg(t *testing.T) {
	cfg := fake(t, "stubborn")
	cfg.Grace = 200 * time.Millisecond
	c := New(cfg)
	c.Start()
	next(t, c)
	next(t, c)
	closeClient(t, c)
	b, _ := os.ReadFile(cfg.LogPath)
	t.Logf("%s", b)
}
