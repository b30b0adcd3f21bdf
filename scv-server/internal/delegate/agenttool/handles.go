package agenttool

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
)

// live holds the delegation handles of the runs under way in this
// process, across sessions: a record and a process tag are named after the
// handle, so two live runs must never share one.
var live = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

// claimHandle marks h live, or a fresh handle of agent when another run
// holds h, and returns the one claimed.
func claimHandle(agent, h string) string {
	live.Lock()
	defer live.Unlock()
	for live.m[h] {
		h = randomHandle(agent)
	}
	live.m[h] = true
	return h
}

func releaseHandle(h string) {
	live.Lock()
	delete(live.m, h)
	live.Unlock()
}

func randomHandle(agent string) string {
	var b [3]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return agent + "-" + hex.EncodeToString(b[:])
}

// newHandleLocked returns a delegation handle, <agent>-<6 hex>, not yet
// issued in this session nor held by a live run of this process. s.mu
// must be held.
func (s *Set) newHandleLocked(agent string) string {
	for {
		h := randomHandle(agent)
		live.Lock()
		taken := live.m[h]
		live.Unlock()
		if !s.handles[h] && !taken {
			s.handles[h] = true
			return h
		}
	}
}
