//go:build linux

package openai

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// nagleServer answers every POST on a kept-alive connection the way
// Python's http.server does with Nagle's algorithm on: the status and
// headers in one write, then each SSE chunk in a write of its own. It
// stops when the listener is closed.
func nagleServer(tb testing.TB) (url string) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	tb.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*net.TCPConn).SetNoDelay(false)
			wg.Go(func() { serveNagle(c) })
		}
	})
	return "http://" + ln.Addr().String() + "/v1/chat/completions"
}

func serveNagle(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
		writes := []string{
			"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
			httpChunk(`data: {"choices":[{"delta":{"content":"hi"}}]}` + "\n\n"),
			httpChunk("data: [DONE]\n\n"),
			"0\r\n\r\n",
		}
		for _, w := range writes {
			if _, err := c.Write([]byte(w)); err != nil {
				return
			}
		}
	}
}

func httpChunk(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }

func post(tb testing.TB, client *http.Client, url string) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(`{"stream":true}`))
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || !strings.Contains(string(body), "[DONE]") {
		tb.Fatalf("body %q, %v", body, err)
	}
}

// BenchmarkNagleServerRequest is one streamed request on a kept-alive
// connection to a server that writes with Nagle's algorithm on, through
// the provider's transport (quickack) and Go's default one (default):
// without quick acknowledgements each request after the connection's
// first few waits for the 40 ms delayed ACK.
func BenchmarkNagleServerRequest(b *testing.B) {
	for _, tc := range []struct {
		name      string
		transport *http.Transport
	}{
		{"quickack", newTransport()},
		{"default", http.DefaultTransport.(*http.Transport).Clone()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			url := nagleServer(b)
			client := &http.Client{Transport: tc.transport}
			defer tc.transport.CloseIdleConnections()
			for range 20 { // past the connection's initial quick-ACK phase
				post(b, client, url)
			}
			for b.Loop() {
				post(b, client, url)
			}
		})
	}
}

func TestTransportConnectionsAckAtOnce(t *testing.T) {
	t.Parallel()
	d := quickAckDial((&net.Dialer{}).DialContext)
	url := nagleServer(t)
	c, err := d(context.Background(), "tcp", strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/v1/chat/completions"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*quickAckConn); !ok {
		t.Fatalf("the provider's dialer returned a %T, want a connection that acknowledges at once", c)
	}
}
