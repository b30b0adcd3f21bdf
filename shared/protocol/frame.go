package protocol

import (
	"bufio"
	"errors"
	"io"
)

// FrameReader splits a stream into newline-delimited frames of at most a
// fixed size, never buffering more than that limit plus a CRLF line end.
type FrameReader struct {
	r   *bufio.Reader
	max int
}

// NewFrameReader returns a reader of frames of at most max bytes, the
// line end (a newline, or a carriage return and a newline) not counted.
func NewFrameReader(r io.Reader, max int) *FrameReader {
	// max+2 leaves room for "\r\n", so a frame of exactly max bytes is
	// accepted with either line end.
	return &FrameReader{r: bufio.NewReaderSize(r, max+2), max: max}
}

// Next returns the next frame without its newline (and without a trailing
// carriage return). Blank lines are skipped. The slice is valid until the
// next call. A line over the limit is discarded up to its newline and
// reported as *ErrFrameTooLarge; the reader can be used again after it.
// At the end of the stream Next returns io.EOF; a last line without a
// newline is still returned as a frame first.
func (fr *FrameReader) Next() ([]byte, error) {
	for {
		line, err := fr.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// Discard the rest of the line, counting its size as a frame
			// would: without the newline and a carriage return before it.
			size, lastCR := 0, false
			for {
				body := line
				if n := len(body); n > 0 && body[n-1] == '\n' {
					body = body[:n-1]
				}
				if n := len(body); n > 0 {
					size += n
					lastCR = body[n-1] == '\r'
				}
				if !errors.Is(err, bufio.ErrBufferFull) {
					break
				}
				line, err = fr.r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			if lastCR {
				size--
			}
			return nil, &ErrFrameTooLarge{Size: size, Limit: fr.max}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		frame := line
		if n := len(frame); n > 0 && frame[n-1] == '\n' {
			frame = frame[:n-1]
		}
		if n := len(frame); n > 0 && frame[n-1] == '\r' {
			frame = frame[:n-1]
		}
		if len(frame) > fr.max {
			// The line fit in the buffer, which is at least 16 bytes and
			// has room for a line end, but the frame is over the limit.
			return nil, &ErrFrameTooLarge{Size: len(frame), Limit: fr.max}
		}
		if isBlank(frame) {
			if err != nil {
				return nil, io.EOF
			}
			continue
		}
		return frame, nil
	}
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}
