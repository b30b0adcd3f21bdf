package protocol

import (
	"bufio"
	"errors"
	"io"
)

// FrameReader splits a stream into newline-delimited frames of at most a
// fixed size, never buffering more than that limit plus the newline.
type FrameReader struct {
	r   *bufio.Reader
	max int
}

// NewFrameReader returns a reader of frames of at most max bytes, the
// newline not counted.
func NewFrameReader(r io.Reader, max int) *FrameReader {
	return &FrameReader{r: bufio.NewReaderSize(r, max+1), max: max}
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
			size := len(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = fr.r.ReadSlice('\n')
				size += len(line)
			}
			if len(line) > 0 && line[len(line)-1] == '\n' {
				size--
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
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
			// Only reachable for a final line without newline at max+1.
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
