package client

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/scv-cli/scv/shared/protocol"
)

// socketPair returns the two ends of a connected Unix stream socket pair,
// the transport a daemon will offer.
func socketPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ends [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f)
		_ = f.Close()
		if err != nil {
			t.Fatal(err)
		}
		ends[i] = c
	}
	return ends[0], ends[1]
}

// TestConnOverASocketPair drives a Conn against a scripted server on the
// other end of a Unix socket pair: the handshake, then a frame of a type
// this client does not know, a malformed frame, a frame over the limit and
// the end of the stream.
func TestConnOverASocketPair(t *testing.T) {
	t.Parallel()
	cli, srv := socketPair(t)
	defer srv.Close()
	conn := NewConn(cli, 256)
	defer conn.Close()

	served := make(chan error, 1)
	go func() {
		served <- func() error {
			fr := protocol.NewFrameReader(srv, protocol.MaxClientFrameBytes)
			var kinds []string
			for range 2 {
				line, err := fr.Next()
				if err != nil {
					return err
				}
				m, err := protocol.DecodeClientMessage(line)
				if err != nil {
					return err
				}
				kinds = append(kinds, m.Kind())
				if ini, ok := m.(*protocol.Initialize); ok {
					b, _ := protocol.EncodeEvent(&protocol.Initialized{RequestID: ini.RequestID, ProtocolVersion: ini.ProtocolVersion, Server: protocol.ServerInfo{Name: "fake", Version: "1"}})
					if _, err := srv.Write(append(b, '\n')); err != nil {
						return err
					}
				}
			}
			if strings.Join(kinds, " ") != "initialize session.start" {
				return errors.New("the server read " + strings.Join(kinds, " "))
			}
			rest := `{"type":"from.the.future","x":1}` + "\n" +
				`{"type":"initialized","request_id":5}` + "\n" +
				`{"type":"x","pad":"` + strings.Repeat("a", 300) + `"}` + "\n"
			if _, err := io.WriteString(srv, rest); err != nil {
				return err
			}
			return srv.(*net.UnixConn).CloseWrite()
		}()
	}()

	hello := Hello("1", "conn-test")
	if hello.ProtocolVersion != HelloVersion || hello.Client.Name != "conn-test" {
		t.Fatalf("Hello = %+v", hello)
	}
	if err := conn.Send(hello, &protocol.SessionStart{RequestID: "2", Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
	f, err := conn.Read()
	if err != nil {
		t.Fatal(err)
	}
	ini, ok := f.Event.(*protocol.Initialized)
	if !ok || f.Err != nil {
		t.Fatalf("first frame = %+v, want initialized", f)
	}
	if v, err := Negotiated(hello, ini); err != nil || v != HelloVersion {
		t.Fatalf("Negotiated = %d, %v", v, err)
	}
	if _, err := Negotiated(hello, &protocol.Initialized{ProtocolVersion: 1}); !errors.Is(err, ErrVersionMismatch) {
		t.Errorf("Negotiated(another version) = %v, want ErrVersionMismatch", err)
	}

	if f, err = conn.Read(); err != nil || !f.Unknown || f.Event != nil || f.Err == nil || string(f.Raw) != `{"type":"from.the.future","x":1}` {
		t.Errorf("unknown frame = %+v, %v", f, err)
	}
	if f, err = conn.Read(); err != nil || f.Unknown || f.Event != nil || f.Err == nil {
		t.Errorf("malformed frame = %+v, %v", f, err)
	}
	var big *protocol.ErrFrameTooLarge
	if f, err = conn.Read(); err != nil || !errors.As(f.Err, &big) || f.Raw != nil {
		t.Errorf("oversized frame = %+v, %v", f, err)
	}
	if _, err = conn.Read(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last frame: %v, want io.EOF", err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

func TestEncodeCheckedRefusesAFrameOverTheLimit(t *testing.T) {
	t.Parallel()
	b, err := EncodeChecked(&protocol.TurnStart{RequestID: "1", SessionID: "s", Prompt: strings.Repeat("x", protocol.MaxClientFrameBytes)})
	var tl *FrameTooLargeError
	if !errors.As(err, &tl) || tl.Kind != protocol.TypeTurnStart || b != nil ||
		!strings.Contains(err.Error(), "the turn.start message is ") || !strings.Contains(err.Error(), " bytes, over the server's 1048576-byte limit; make it shorter") {
		t.Fatalf("EncodeChecked = %v, want a *FrameTooLargeError", err)
	}
	b, err = EncodeChecked(&protocol.TurnStart{RequestID: "1", SessionID: "s", Prompt: "hi"})
	if err != nil || string(b) != `{"type":"turn.start","request_id":"1","session_id":"s","prompt":"hi"}`+"\n" {
		t.Fatalf("EncodeChecked = %q, %v", b, err)
	}
}
