package proctag

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEnvironHasTag(t *testing.T) {
	t.Parallel()
	env := []byte("A=1\x00" + Var + "=t,x,y\x00B=2")
	for _, tc := range []struct {
		env  []byte
		tag  string
		want bool
	}{
		{env, "t", true},
		{env, "x", true},
		{env, "y", true},
		{env, "", false},
		{env, "z", false},
		{env, "t,x", false},
		{[]byte("OTHER=t\x00"), "t", false},
		{[]byte(Var + "=t"), "t", true},
		{[]byte(Var + "=tt\x00"), "t", false},
		{[]byte("X" + Var + "=t\x00"), "t", false},
		{nil, "t", false},
	} {
		if got := EnvironHasTag(tc.env, tc.tag); got != tc.want {
			t.Errorf("EnvironHasTag(%q, %q) = %v, want %v", tc.env, tc.tag, got, tc.want)
		}
	}
}

func FuzzEnvironHasTag(f *testing.F) {
	f.Add([]byte("A=1\x00"+Var+"=t,x\x00"), "t")
	f.Add([]byte(Var+"="), "")
	f.Fuzz(func(t *testing.T, env []byte, tag string) {
		got := EnvironHasTag(env, tag)
		if got && (tag == "" || strings.Contains(tag, ",") || strings.Contains(tag, "\x00")) {
			t.Fatalf("EnvironHasTag(%q, %q) = true for a tag that cannot be listed", env, tag)
		}
	})
}

func TestParseStat(t *testing.T) {
	t.Parallel()
	tail := " S 1 100 100 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 98765 1000 10"
	for _, tc := range []struct {
		name string
		line string
		want Stat
		ok   bool
	}{
		{"plain", "42 (sleep)" + tail, Stat{State: 'S', PPID: 1, PGRP: 100, Flags: 4194560, StartTime: 98765}, true},
		{"spaces and parens in comm", "42 (a b) (c) d)" + tail, Stat{State: 'S', PPID: 1, PGRP: 100, Flags: 4194560, StartTime: 98765}, true},
		{"empty comm", "42 ()" + tail, Stat{State: 'S', PPID: 1, PGRP: 100, Flags: 4194560, StartTime: 98765}, true},
		{"no parens", "42 sleep" + tail, Stat{}, false},
		{"truncated", "42 (sleep) S 1 100", Stat{}, false},
		{"bad start time", "42 (x) S 1 100 100 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 abc", Stat{}, false},
		{"long state", "42 (x) SS 1 100 100 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5", Stat{}, false},
		{"empty", "", Stat{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseStat([]byte(tc.line))
			if (err == nil) != tc.ok {
				t.Fatalf("ParseStat error %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrMalformedStat) {
				t.Fatalf("error %v does not wrap ErrMalformedStat", err)
			}
			if got != tc.want {
				t.Fatalf("ParseStat = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("42 (a b) (c)) S 1 100 100 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 98765 1 2"))
	f.Add([]byte("()"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseStat(data)
		if err != nil && st != (Stat{}) {
			t.Fatalf("ParseStat returned %+v with error %v", st, err)
		}
	})
}

func TestReadStatSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux only")
	}
	st, ok := ReadStat(os.Getpid())
	if !ok || st.StartTime == 0 || st.PPID != os.Getppid() {
		t.Fatalf("ReadStat(self) = %+v, %v; want our parent %d and a start time", st, ok, os.Getppid())
	}
	if _, ok := ReadStat(0); ok {
		t.Fatal("ReadStat(0) succeeded")
	}
}

// startEscapees runs a shell, tagged tag, that starts n sleeps which leave
// its process group with setsid (one of them ignoring SIGTERM when
// ignoreTerm), prints their pids and exits. It returns the pids.
func startEscapees(t *testing.T, tag string, n int, ignoreTerm bool) []int {
	t.Helper()
	script := ""
	for i := range n {
		cmd := "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!\n"
		if ignoreTerm && i == 0 {
			cmd = "setsid sh -c 'trap \"\" TERM; exec sleep 300' </dev/null >/dev/null 2>&1 & echo $!\n"
		}
		script += cmd
	}
	c := exec.Command("sh", "-c", script)
	c.Env = append(os.Environ(), Var+"=outer,"+tag)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
		if err != nil {
			t.Fatalf("shell printed %q", sc.Text())
		}
		pids = append(pids, pid)
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if len(pids) != n {
		t.Fatalf("shell started %d processes, want %d", len(pids), n)
	}
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pids
}

// waitFound waits until Find(tag) lists every pid in want (a process
// may still be in execve right after fork).
func waitFound(t *testing.T, tag string, want []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := Find(tag)
		missing := false
		for _, p := range want {
			if !slices.Contains(got, p) {
				missing = true
			}
		}
		if !missing {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Find(%q) = %v, want it to include %v", tag, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func alive(pid int) bool {
	st, ok := ReadStat(pid)
	return ok && st.State != 'Z' && st.State != 'X'
}

func TestFindAndStopSetsidDescendants(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process tags are read from /proc")
	}
	tag := "proctag-test-" + strconv.Itoa(os.Getpid())
	pids := startEscapees(t, tag, 3, false)
	waitFound(t, tag, pids)
	if got := Find(tag + "-other"); len(got) != 0 {
		t.Fatalf("Find of another tag = %v, want none", got)
	}
	start := time.Now()
	// A long grace: TERM suffices for sleep, so Stop must return well before
	// the grace ends, however loaded the machine is.
	const grace = time.Minute
	killed, survivors := Stop(tag, grace)
	if killed != 3 || survivors != 0 {
		t.Fatalf("Stop = %d killed, %d survivors; want 3, 0", killed, survivors)
	}
	if d := time.Since(start); d > grace/2 {
		t.Errorf("Stop took %v for processes that exit on TERM", d)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d is still alive", pid)
		}
	}
	if got := Find(tag); len(got) != 0 {
		t.Fatalf("after Stop, Find = %v", got)
	}
}

func TestStopKillsWhatIgnoresTerm(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process tags are read from /proc")
	}
	tag := "proctag-term-" + strconv.Itoa(os.Getpid())
	pids := startEscapees(t, tag, 2, true)
	waitFound(t, tag, pids)
	// Let the trap be installed before TERM arrives: the pid shows the
	// sleep's command line once sh has exec'd it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pids[0]) + "/cmdline")
		if strings.HasPrefix(string(cmd), "sleep\x00") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d never exec'd sleep: %q", pids[0], cmd)
		}
		time.Sleep(10 * time.Millisecond)
	}
	killed, survivors := Stop(tag, 300*time.Millisecond)
	if killed != 2 || survivors != 0 {
		t.Fatalf("Stop = %d killed, %d survivors; want 2, 0", killed, survivors)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d is still alive", pid)
		}
	}
}

func TestKillAndEmptyTag(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process tags are read from /proc")
	}
	if got := Find(""); got != nil {
		t.Fatalf("Find(\"\") = %v", got)
	}
	if k, s := Stop("", time.Second); k != 0 || s != 0 {
		t.Fatalf("Stop(\"\") = %d, %d", k, s)
	}
	tag := "proctag-kill-" + strconv.Itoa(os.Getpid())
	pids := startEscapees(t, tag, 1, true)
	waitFound(t, tag, pids)
	if k, s := Kill(tag); k != 1 || s != 0 {
		t.Fatalf("Kill = %d killed, %d survivors; want 1, 0", k, s)
	}
	if k, s := Kill(tag); k != 0 || s != 0 {
		t.Fatalf("second Kill = %d, %d; want 0, 0", k, s)
	}
}

// TestParseStatAllocatesNothing: every running call's tree scan parses
// every process's stat 20 times a second.
func TestParseStatAllocatesNothing(t *testing.T) {
	line := []byte("42 (a b) (c)) S 1 100 100 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 98765 1 2")
	var st Stat
	if n := testing.AllocsPerRun(100, func() { st, _ = ParseStat(line) }); n != 0 {
		t.Fatalf("ParseStat allocates %v times", n)
	}
	if st.State != 'S' || st.PPID != 1 || st.PGRP != 100 || st.StartTime != 98765 {
		t.Fatalf("ParseStat = %+v", st)
	}
}
