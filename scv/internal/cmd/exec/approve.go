package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/scv-cli/scv/shared/protocol"
	"golang.org/x/sys/unix"
)

// answer is a person's decision on one approval request.
type answer struct {
	req      *protocol.ApprovalRequested
	approved bool
}

// asker asks approval requests on the terminal, one at a time, in its own
// goroutine so the run keeps reading events (a cancel, the server dying)
// while a person thinks. It stops when its context is cancelled, even in the
// middle of a question.
type asker struct {
	in      io.Reader
	errOut  io.Writer
	reqs    chan *protocol.ApprovalRequested
	answers chan answer
	eof     bool // the terminal was closed: deny the rest unasked
}

func newAsker(in io.Reader, errOut io.Writer) *asker {
	return &asker{
		in:      in,
		errOut:  errOut,
		reqs:    make(chan *protocol.ApprovalRequested, 1),
		answers: make(chan answer),
	}
}

func (a *asker) run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case req := <-a.reqs:
			ok, err := a.ask(ctx, req)
			if err != nil {
				return nil
			}
			select {
			case a.answers <- answer{req: req, approved: ok}:
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// ask puts one question and reads the answer; only "y" or "yes" approves.
// It returns an error only when ctx ended the question.
func (a *asker) ask(ctx context.Context, req *protocol.ApprovalRequested) (bool, error) {
	if a.eof {
		fmt.Fprintf(a.errOut, "scv: denied %q: stdin closed, so there is no one to ask\n", req.Summary)
		return false, nil
	}
	fmt.Fprintf(a.errOut, "Allow %s? [y/N] ", req.Summary)
	line, err := readLine(ctx, a.in)
	if ctx.Err() != nil {
		// The run ends the prompt's line (closePrompt), in order with
		// what it prints next.
		return false, ctx.Err()
	}
	if err != nil {
		a.eof = true
		fmt.Fprintln(a.errOut)
		return false, nil
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

// readLine reads one line from in, without its newline. From a file (the
// terminal) it waits with poll(2) in short slices and checks ctx between
// them, because a blocked read(2) on a terminal cannot be interrupted and
// would leave this goroutine behind. It reads byte by byte so nothing past
// the line is consumed.
func readLine(ctx context.Context, in io.Reader) (string, error) {
	f, isFile := in.(*os.File)
	var line []byte
	b := make([]byte, 1)
	for {
		var n int
		var err error
		if isFile {
			n, err = readFileByte(ctx, f, b)
		} else {
			n, err = in.Read(b)
		}
		if n == 1 {
			if b[0] == '\n' {
				return strings.TrimSuffix(string(line), "\r"), nil
			}
			line = append(line, b[0])
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				return string(line), nil
			}
			return "", err
		}
	}
}

// pollSlice is how often a waiting read checks its context, in ms.
const pollSlice = 50

func readFileByte(ctx context.Context, f *os.File, b []byte) (int, error) {
	fd := int(f.Fd())
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		n, err := unix.Poll(fds, pollSlice)
		if errors.Is(err, unix.EINTR) || (err == nil && n == 0) {
			continue
		}
		if err != nil {
			return 0, err
		}
		m, err := unix.Read(fd, b)
		switch {
		case errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN):
			continue
		case err != nil:
			return 0, err
		case m == 0:
			return 0, io.EOF
		}
		return m, nil
	}
}
