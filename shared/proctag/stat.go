package proctag

import (
	"bytes"
	"errors"
	"fmt"
)

// Stat is what SCV reads from /proc/<pid>/stat.
type Stat struct {
	// State is the state letter (R, S, D, Z, ...).
	State byte
	PPID  int
	PGRP  int
	// Flags are the kernel's per-process flags (PF_*).
	Flags uint64
	// StartTime is the start time in clock ticks since boot (field 22):
	// with the pid, it identifies a process across pid reuse.
	StartTime uint64
}

// ErrMalformedStat is returned by ParseStat for text that is not a
// /proc/<pid>/stat line.
var ErrMalformedStat = errors.New("malformed /proc stat line")

// ParseStat parses the text of /proc/<pid>/stat. The command name (field
// 2) is in parentheses and may itself hold spaces and parentheses, so the
// fields after it are found from the last ')'. It allocates nothing: the
// tree scans of every running call parse every process's stat.
func ParseStat(data []byte) (Stat, error) {
	open := bytes.IndexByte(data, '(')
	i := bytes.LastIndexByte(data, ')')
	if open < 0 || i < open {
		return Stat{}, ErrMalformedStat
	}
	// Fields 3..22 are field 0..19 after the ')'.
	var st Stat
	rest := data[i+1:]
	for n := 0; n < 20; n++ {
		var f []byte
		f, rest = nextField(rest)
		if f == nil {
			return Stat{}, ErrMalformedStat
		}
		var err error
		switch n {
		case 0:
			if len(f) != 1 {
				return Stat{}, ErrMalformedStat
			}
			st.State = f[0]
		case 1:
			var v uint64
			if v, err = parseUint(f, "ppid"); err == nil {
				st.PPID = int(v)
			}
		case 2:
			var v uint64
			if v, err = parseUint(f, "pgrp"); err == nil {
				st.PGRP = int(v)
			}
		case 6:
			st.Flags, err = parseUint(f, "flags")
		case 19:
			st.StartTime, err = parseUint(f, "start time")
		}
		if err != nil {
			return Stat{}, err
		}
	}
	return st, nil
}

// nextField returns the first whitespace-separated field of b and what
// follows it; nil when there is none.
func nextField(b []byte) (field, rest []byte) {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i == len(b) {
		return nil, nil
	}
	j := i
	for j < len(b) && !isSpace(b[j]) {
		j++
	}
	return b[i:j], b[j:]
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
}

// parseUint parses a decimal field without allocating; a negative pid
// or group (a kernel thread's pgrp can be 0, never negative) is
// malformed.
func parseUint(f []byte, what string) (uint64, error) {
	var v uint64
	for _, c := range f {
		if c < '0' || c > '9' || v > (1<<63)/10 {
			return 0, fmt.Errorf("%w: %s: %q is not a number", ErrMalformedStat, what, f)
		}
		v = v*10 + uint64(c-'0')
	}
	return v, nil
}

// ReadStat reads and parses /proc/<pid>/stat; ok is false when the
// process does not exist or its stat cannot be read or parsed.
func ReadStat(pid int) (Stat, bool) {
	if pid <= 0 {
		return Stat{}, false
	}
	st, _, ok := ReadStatInto(pid, nil)
	return st, ok
}
