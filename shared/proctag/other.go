//go:build !linux

package proctag

import (
	"syscall"
	"time"
)

// Find finds nothing off Linux.
func Find(tag string) []int { return nil }

// Signal does nothing off Linux.
func Signal(tag string, sig syscall.Signal) {}

// Kill does nothing off Linux.
func Kill(tag string) (killed, survivors int) { return 0, 0 }

// Stop does nothing off Linux.
func Stop(tag string, grace time.Duration) (killed, survivors int) { return 0, 0 }

// AllPids lists nothing off Linux.
func AllPids() []int { return nil }

// ReadStatInto reads nothing off Linux.
func ReadStatInto(pid int, buf []byte) (Stat, []byte, bool) { return Stat{}, buf, false }
