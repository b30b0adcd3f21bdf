package proctag

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
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
// fields after it are found from the last ')'.
func ParseStat(data []byte) (Stat, error) {
	open := bytes.IndexByte(data, '(')
	i := bytes.LastIndexByte(data, ')')
	if open < 0 || i < open {
		return Stat{}, ErrMalformedStat
	}
	f := bytes.Fields(data[i+1:])
	// Fields 3..22 are f[0]..f[19].
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, ErrMalformedStat
	}
	var st Stat
	var err error
	st.State = f[0][0]
	if st.PPID, err = strconv.Atoi(string(f[1])); err != nil {
		return Stat{}, fmt.Errorf("%w: ppid: %w", ErrMalformedStat, err)
	}
	if st.PGRP, err = strconv.Atoi(string(f[2])); err != nil {
		return Stat{}, fmt.Errorf("%w: pgrp: %w", ErrMalformedStat, err)
	}
	if st.Flags, err = strconv.ParseUint(string(f[6]), 10, 64); err != nil {
		return Stat{}, fmt.Errorf("%w: flags: %w", ErrMalformedStat, err)
	}
	if st.StartTime, err = strconv.ParseUint(string(f[19]), 10, 64); err != nil {
		return Stat{}, fmt.Errorf("%w: start time: %w", ErrMalformedStat, err)
	}
	return st, nil
}

// ReadStat reads and parses /proc/<pid>/stat; ok is false when the
// process does not exist or its stat cannot be read or parsed.
func ReadStat(pid int) (Stat, bool) {
	if pid <= 0 {
		return Stat{}, false
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, false
	}
	st, err := ParseStat(data)
	return st, err == nil
}
