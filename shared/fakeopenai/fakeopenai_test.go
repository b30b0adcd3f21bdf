package fakeopenai_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/shared/fakeopenai"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const streamBody = `{"model":"m1","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`

func post(t *testing.T, ctx context.Context, url, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// events reads an SSE body and returns the data payloads in order.
func events(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, p)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type chunk struct {
	Choices []struct {
		Delta struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		TotalTokens      int64 `json:"total_tokens"`
	} `json:"usage"`
	Model string `json:"model"`
}

func decode(t *testing.T, payload string) chunk {
	t.Helper()
	var c chunk
	if err := json.Unmarshal([]byte(payload), &c); err != nil {
		t.Fatalf("chunk %q: %v", payload, err)
	}
	return c
}

func TestTextStream(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		body      string
		wantUsage bool
	}{
		{"usage asked", streamBody, true},
		{"usage not asked", `{"model":"m1","stream":true,"messages":[]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeopenai.NewServer()
			defer srv.Close()
			srv.Enqueue(fakeopenai.Script(fakeopenai.Text("Hel", "lo"), fakeopenai.Usage(7, 2)))
			resp := post(t, context.Background(), srv.URL()+"/chat/completions", tc.body)
			defer resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			ev := events(t, resp.Body)
			want := 4 // two deltas, finish, [DONE]
			if tc.wantUsage {
				want++
			}
			if len(ev) != want {
				t.Fatalf("events %q, want %d", ev, want)
			}
			first := decode(t, ev[0])
			if first.Choices[0].Delta.Role != "assistant" || *first.Choices[0].Delta.Content != "Hel" || first.Model != "m1" {
				t.Fatalf("first chunk %s", ev[0])
			}
			if second := decode(t, ev[1]); second.Choices[0].Delta.Role != "" || *second.Choices[0].Delta.Content != "lo" {
				t.Fatalf("second chunk %s", ev[1])
			}
			if fin := decode(t, ev[2]); fin.Choices[0].FinishReason == nil || *fin.Choices[0].FinishReason != "stop" {
				t.Fatalf("finish chunk %s", ev[2])
			}
			if tc.wantUsage {
				u := decode(t, ev[3])
				if u.Usage == nil || u.Usage.PromptTokens != 7 || u.Usage.CompletionTokens != 2 || u.Usage.TotalTokens != 9 || len(u.Choices) != 0 {
					t.Fatalf("usage chunk %s", ev[3])
				}
			}
			if ev[len(ev)-1] != "[DONE]" {
				t.Fatalf("last event %q", ev[len(ev)-1])
			}
		})
	}
}

func TestToolCalls(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.NewServer()
	defer srv.Close()
	srv.Enqueue(fakeopenai.Script(
		fakeopenai.ToolCall("call_a", "read", `{"pa`, `th":"x"}`),
		fakeopenai.ToolCall("call_b", "bash", `{}`),
	))
	resp := post(t, context.Background(), srv.URL()+"/chat/completions", streamBody)
	defer resp.Body.Close()
	ev := events(t, resp.Body)
	// a: head + 2 fragments, b: head + 1 fragment, finish, [DONE]
	if len(ev) != 7 {
		t.Fatalf("events %q", ev)
	}
	type call struct{ id, name, args string }
	calls := map[int]*call{}
	for _, p := range ev[:5] {
		for _, tc := range decode(t, p).Choices[0].Delta.ToolCalls {
			c := calls[tc.Index]
			if c == nil {
				c = &call{id: tc.ID, name: tc.Function.Name}
				calls[tc.Index] = c
				if tc.Type != "function" {
					t.Fatalf("type %q", tc.Type)
				}
			} else if tc.ID != "" || tc.Function.Name != "" {
				t.Fatalf("fragment repeats id/name: %s", p)
			}
			c.args += tc.Function.Arguments
		}
	}
	if a := calls[0]; a == nil || *a != (call{"call_a", "read", `{"path":"x"}`}) {
		t.Fatalf("call 0 = %+v", a)
	}
	if b := calls[1]; b == nil || *b != (call{"call_b", "bash", `{}`}) {
		t.Fatalf("call 1 = %+v", b)
	}
	if fin := decode(t, ev[5]); *fin.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("finish %s", ev[5])
	}
}

func TestExplicitFinishAndEvent(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.NewServer()
	defer srv.Close()
	srv.Enqueue(fakeopenai.Script(fakeopenai.Text("x"), fakeopenai.Finish("length"), fakeopenai.Event(`{"custom":1}`)))
	resp := post(t, context.Background(), srv.URL()+"/chat/completions", streamBody)
	defer resp.Body.Close()
	ev := events(t, resp.Body)
	if len(ev) != 4 || ev[2] != `{"custom":1}` || ev[3] != "[DONE]" {
		t.Fatalf("events %q", ev)
	}
	if fin := decode(t, ev[1]); *fin.Choices[0].FinishReason != "length" {
		t.Fatalf("finish %s", ev[1])
	}
}

func TestErrorReplies(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.NewServer()
	defer srv.Close()
	srv.Enqueue(
		fakeopenai.Script(fakeopenai.APIError(429, "slow down"), fakeopenai.Header("Retry-After", "3"), fakeopenai.Text("ignored")),
		fakeopenai.Script(fakeopenai.Status(502, "<html>bad gateway</html>"), fakeopenai.Header("Content-Type", "text/html")),
	)
	url := srv.URL() + "/chat/completions"

	resp := post(t, context.Background(), url, streamBody)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" || e.Error.Message != "slow down" || e.Error.Type != "rate_limit_error" {
		t.Fatalf("got %d %v %s", resp.StatusCode, resp.Header, body)
	}

	resp = post(t, context.Background(), url, streamBody)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 || string(body) != "<html>bad gateway</html>" || resp.Header.Get("Content-Type") != "text/html" {
		t.Fatalf("got %d %v %s", resp.StatusCode, resp.Header, body)
	}

	// The script is used up.
	resp = post(t, context.Background(), url, streamBody)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 || !strings.Contains(string(body), `"message":"fakeopenai: no scripted reply left"`) {
		t.Fatalf("got %d %s", resp.StatusCode, body)
	}
}

func TestOtherPathsDoNotConsume(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.NewServer()
	defer srv.Close()
	srv.Enqueue(fakeopenai.Script(fakeopenai.Text("ok")))
	resp := post(t, context.Background(), srv.URL()+"/embeddings", "")
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL()+"/chat/completions", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	resp = post(t, context.Background(), srv.URL()+"/chat/completions", streamBody)
	defer resp.Body.Close()
	if ev := events(t, resp.Body); len(ev) != 3 {
		t.Fatalf("events %q", ev)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("%d requests recorded", n)
	}
}

func TestRawAndNoDone(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.NewServer()
	defer srv.Close()
	big := bytes.Repeat([]byte("x"), 2<<20)
	srv.Enqueue(fakeopenai.Script(
		fakeopenai.Text("a"),
		fakeopenai.Raw([]byte("data: {not json\n\n")),
		fakeopenai.Raw(append([]byte("data: "), big...)),
		fakeopenai.NoDone(),
	))
	resp := post(t, context.Background(), srv.URL()+"/chat/completions", streamBody)
	defer resp.Body.Close()
	ev := events(t, resp.Body)
	if len(ev) != 3 || ev[1] != "{not json" || len(ev[2]) != len(big) {
		t.Fatalf("got %d events", len(ev))
	}
}

func TestRepeat(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.NewServer()
	defer srv.Close()
	srv.Enqueue(fakeopenai.Script(fakeopenai.Repeat(10000, "tok "), fakeopenai.Text("end")))
	resp := post(t, context.Background(), srv.URL()+"/chat/completions", streamBody)
	defer resp.Body.Close()
	ev := events(t, resp.Body)
	if len(ev) != 10003 {
		t.Fatalf("%d events", len(ev))
	}
	var text strings.Builder
	for i, p := range ev[:10001] {
		c := decode(t, p)
		if (i == 0) != (c.Choices[0].Delta.Role == "assistant") {
			t.Fatalf("event %d role %q", i, c.Choices[0].Delta.Role)
		}
		text.WriteString(*c.Choices[0].Delta.Content)
	}
	if text.String() != strings.Repeat("tok ", 10000)+"end" {
		t.Fatal("text mismatch")
	}
}

func TestDelayAndPace(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.NewServer()
	defer srv.Close()
	srv.Enqueue(fakeopenai.Script(fakeopenai.Delay(time.Millisecond), fakeopenai.Pace(time.Millisecond), fakeopenai.Text("a", "b"), fakeopenai.Repeat(3, "c")))
	resp := post(t, context.Background(), srv.URL()+"/chat/completions", streamBody)
	defer resp.Body.Close()
	if ev := events(t, resp.Body); len(ev) != 7 {
		t.Fatalf("events %q", ev)
	}
}

func TestHangEndsWhenClientGoes(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.NewServer()
	defer srv.Close()
	srv.Enqueue(fakeopenai.Script(fakeopenai.Text("a"), fakeopenai.Hang(), fakeopenai.Text("never")))
	ctx, cancel := context.WithCancel(context.Background())
	resp := post(t, ctx, srv.URL()+"/chat/completions", streamBody)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("%q %v", line, err)
	}
	cancel()
	if _, err := io.ReadAll(br); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after cancel: %v", err)
	}
}

func TestCloseUnblocksHang(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.NewServer()
	srv.Enqueue(fakeopenai.Script(fakeopenai.Hang()), fakeopenai.Script(fakeopenai.Delay(time.Hour)))
	done := make(chan error, 2)
	for range 2 {
		go func() {
			resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(streamBody))
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			done <- err
		}()
	}
	if _, err := srv.WaitRequests(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	srv.Close() // must return although both handlers are blocked
	for range 2 {
		<-done // the body ends, with or without an error
	}
	srv.Close()
}

func TestRequestsRecorded(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.NewServer()
	defer srv.Close()
	srv.Enqueue(fakeopenai.Script(fakeopenai.Text("ok")))
	body := `{"model":"gpt-x","stream":true,"stream_options":{"include_usage":true},
	  "messages":[
	    {"role":"system","content":"be brief"},
	    {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
	    {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}}]},
	    {"role":"tool","tool_call_id":"c1","content":"file"}
	  ],
	  "tools":[{"type":"function","function":{"name":"read","description":"Read a file","parameters":{"type":"object"}}}]}`
	resp := post(t, context.Background(), srv.URL()+"/chat/completions", body, "Authorization", "Bearer k", "X-Custom", "v")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	reqs, err := srv.WaitRequests(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/v1/chat/completions" || r.Model != "gpt-x" || !r.Stream || !r.IncludeUsage {
		t.Fatalf("request %+v", r)
	}
	if r.Header.Get("Authorization") != "Bearer k" || r.Header.Get("X-Custom") != "v" {
		t.Fatalf("headers %v", r.Header)
	}
	if got := strings.Join(r.Roles(), ","); got != "system,user,assistant,tool" {
		t.Fatalf("roles %s", got)
	}
	m := r.Messages
	if m[0].Content != "be brief" || m[1].Content != "ab" || m[2].Content != "" || m[3].Content != "file" || m[3].ToolCallID != "c1" {
		t.Fatalf("messages %+v", m)
	}
	if len(m[2].ToolCalls) != 1 || m[2].ToolCalls[0] != (fakeopenai.MessageToolCall{ID: "c1", Name: "read", Arguments: "{}"}) {
		t.Fatalf("tool calls %+v", m[2].ToolCalls)
	}
	if got := r.ToolNames(); len(got) != 1 || got[0] != "read" || r.Tools[0].Description != "Read a file" || string(r.Tools[0].Parameters) != `{"type":"object"}` {
		t.Fatalf("tools %+v", r.Tools)
	}
	if r.JSON["model"] != "gpt-x" {
		t.Fatalf("json %v", r.JSON)
	}
	// Requests returns copies: mutating one does not affect the record.
	r.Header.Set("X-Custom", "changed")
	if srv.Requests()[0].Header.Get("X-Custom") != "v" {
		t.Fatal("Requests shares headers")
	}
}

func TestWaitRequestsEnds(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.NewServer()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := srv.WaitRequests(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	srv.Close()
	if _, err := srv.WaitRequests(context.Background(), 1); err == nil {
		t.Fatal("no error after Close")
	}
}

func TestNonStreaming(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.NewServer()
	defer srv.Close()
	srv.Enqueue(fakeopenai.Script(fakeopenai.Text("a", "b"), fakeopenai.ToolCall("c1", "read", `{"p":`, `1}`), fakeopenai.Usage(3, 4)))
	resp := post(t, context.Background(), srv.URL()+"/chat/completions", `{"model":"m","messages":[]}`)
	defer resp.Body.Close()
	var c struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Role      string `json:"role"`
				Content   string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int64 `json:"prompt_tokens"`
			CompletionTokens int64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	ch := c.Choices[0]
	if c.Object != "chat.completion" || ch.Message.Content != "ab" || ch.FinishReason != "tool_calls" ||
		ch.Message.ToolCalls[0].Function.Arguments != `{"p":1}` || c.Usage.PromptTokens != 3 || c.Usage.CompletionTokens != 4 {
		t.Fatalf("%+v", c)
	}
}

func TestModelList(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.NewServer()
	defer srv.Close()
	get := func() (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL() + "/models")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(); code != http.StatusNotFound {
		t.Fatalf("before SetModels: HTTP %d, want 404", code)
	}
	srv.SetModels("m-1", "m-2")
	code, body := get()
	want := `{"object":"list","data":[{"id":"m-1","object":"model","owned_by":"fakeopenai"},{"id":"m-2","object":"model","owned_by":"fakeopenai"}]}` + "\n"
	if code != http.StatusOK || body != want {
		t.Fatalf("HTTP %d %s, want %s", code, body, want)
	}
	srv.SetModels()
	if _, body := get(); !strings.Contains(body, `"data":[]`) {
		t.Fatalf("empty list: %s", body)
	}
	if n, m := len(srv.Requests()), len(srv.ModelRequests()); n != 0 || m != 3 {
		t.Fatalf("%d requests and %d listing requests, want 0 and 3", n, m)
	}
}
