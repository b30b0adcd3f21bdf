package fakeopenai_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/fakeopenai"
)

const respBody = `{"model":"m2","stream":true,"instructions":"be brief","store":false,
 "input":[{"type":"message","role":"user","content":"hi"},
  {"type":"function_call","call_id":"c0","name":"read","arguments":"{}"},
  {"type":"function_call_output","call_id":"c0","output":"data"},
  {"role":"assistant","content":[{"type":"output_text","text":"ok"}]}],
 "tools":[{"type":"function","name":"read","description":"Read","parameters":{"type":"object"}},{"type":"web_search"}]}`

// sseEvent is one event of a Responses stream: its "event:" name and data.
type sseEvent struct {
	name string
	data map[string]any
}

func respEvents(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var name string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
		}
		if p, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(p), &m); err != nil {
				t.Fatalf("event data %q: %v", p, err)
			}
			if m["type"] != name {
				t.Fatalf("event %q carries type %v", name, m["type"])
			}
			out = append(out, sseEvent{name, m})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func names(ev []sseEvent) string {
	var n []string
	for _, e := range ev {
		n = append(n, strings.TrimPrefix(e.name, "response."))
	}
	return strings.Join(n, ",")
}

func TestResponsesStream(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.NewServer()
	defer srv.Close()
	srv.Enqueue(fakeopenai.Script(
		fakeopenai.WebSearch("tokio version"),
		fakeopenai.Text("Tokio ", "1.48"),
		fakeopenai.Citation("https://crates.io/crates/tokio", "tokio"),
		fakeopenai.ToolCall("call_1", "read", `{"p":`, `1}`),
		fakeopenai.Usage(9, 4),
	))
	resp := post(t, context.Background(), srv.URL()+"/responses", respBody)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ev := respEvents(t, resp.Body)
	want := "created,in_progress," +
		"output_item.added,web_search_call.in_progress,web_search_call.searching,web_search_call.completed,output_item.done," +
		"output_item.added,content_part.added,output_text.delta,output_text.delta,output_text.annotation.added," +
		"output_text.done,content_part.done,output_item.done," +
		"output_item.added,function_call_arguments.delta,function_call_arguments.delta,function_call_arguments.done,output_item.done," +
		"completed"
	if got := names(ev); got != want {
		t.Fatalf("events\n %s\nwant\n %s", got, want)
	}
	for i, e := range ev {
		if e.data["sequence_number"] != float64(i) {
			t.Fatalf("event %d has sequence_number %v", i, e.data["sequence_number"])
		}
	}
	if d := ev[9].data; d["delta"] != "Tokio " || d["item_id"] != "msg_fake_1" || d["output_index"] != float64(1) {
		t.Fatalf("text delta %v", d)
	}
	if a := ev[11].data["annotation"].(map[string]any); a["url"] != "https://crates.io/crates/tokio" || a["type"] != "url_citation" || a["end_index"] != float64(10) {
		t.Fatalf("annotation %v", a)
	}
	if it := ev[15].data["item"].(map[string]any); it["call_id"] != "call_1" || it["name"] != "read" || it["id"] != "fc_fake_1" {
		t.Fatalf("call item %v", it)
	}
	if ev[16].data["item_id"] != "fc_fake_1" || ev[18].data["arguments"] != `{"p":1}` {
		t.Fatalf("argument events %v %v", ev[16].data, ev[18].data)
	}
	final := ev[len(ev)-1].data["response"].(map[string]any)
	out := final["output"].([]any)
	usage := final["usage"].(map[string]any)
	if final["status"] != "completed" || final["model"] != "m2" || len(out) != 3 || usage["input_tokens"] != float64(9) || usage["output_tokens"] != float64(4) {
		t.Fatalf("final response %v", final)
	}
	msg := out[1].(map[string]any)["content"].([]any)[0].(map[string]any)
	if msg["text"] != "Tokio 1.48" || len(msg["annotations"].([]any)) != 1 {
		t.Fatalf("message %v", msg)
	}

	r := srv.Requests()[0]
	if r.Wire != "responses" || r.Model != "m2" || !r.Stream || r.Instructions != "be brief" {
		t.Fatalf("request %+v", r)
	}
	if got := strings.Join(r.ToolTypes(), ","); got != "function,web_search" || r.Tools[0].Name != "read" || string(r.Tools[0].Parameters) != `{"type":"object"}` {
		t.Fatalf("tools %+v", r.Tools)
	}
	in := r.Input
	if len(in) != 4 || in[0] != (fakeopenai.InputItem{Type: "message", Role: "user", Content: "hi"}) ||
		in[1] != (fakeopenai.InputItem{Type: "function_call", CallID: "c0", Name: "read", Arguments: "{}"}) ||
		in[2] != (fakeopenai.InputItem{Type: "function_call_output", CallID: "c0", Output: "data"}) ||
		in[3] != (fakeopenai.InputItem{Type: "message", Role: "assistant", Content: "ok"}) {
		t.Fatalf("input %+v", in)
	}
}

func TestResponsesTerminals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		steps []fakeopenai.Step
		last  string
		check func(map[string]any) bool
	}{
		{"incomplete", []fakeopenai.Step{fakeopenai.Text("cut"), fakeopenai.Incomplete("max_output_tokens")}, "response.incomplete",
			func(r map[string]any) bool {
				return r["status"] == "incomplete" && r["incomplete_details"].(map[string]any)["reason"] == "max_output_tokens"
			}},
		{"failed", []fakeopenai.Step{fakeopenai.Failed("server_error", "boom")}, "response.failed",
			func(r map[string]any) bool {
				e := r["error"].(map[string]any)
				return r["status"] == "failed" && e["code"] == "server_error" && e["message"] == "boom"
			}},
		{"no usage", []fakeopenai.Step{fakeopenai.Text("x")}, "response.completed",
			func(r map[string]any) bool { _, ok := r["usage"]; return !ok }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeopenai.NewServer()
			defer srv.Close()
			srv.Enqueue(fakeopenai.Script(tc.steps...))
			resp := post(t, context.Background(), srv.URL()+"/responses", respBody)
			defer resp.Body.Close()
			ev := respEvents(t, resp.Body)
			last := ev[len(ev)-1]
			if last.name != tc.last || !tc.check(last.data["response"].(map[string]any)) {
				t.Fatalf("last event %s %v", last.name, last.data)
			}
		})
	}
}

// Steps shared with the chat wire work the same: NoDone drops the
// terminal event, Event sends a payload verbatim under its own type,
// Repeat batches deltas, errors are plain HTTP replies.
func TestResponsesSharedSteps(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.NewServer()
	defer srv.Close()
	srv.Enqueue(
		fakeopenai.Script(fakeopenai.Event(`{"type":"error","code":"x","message":"m"}`), fakeopenai.Repeat(1000, "tok "), fakeopenai.NoDone()),
		fakeopenai.Script(fakeopenai.APIError(429, "slow down"), fakeopenai.Header("Retry-After", "1")),
	)
	resp := post(t, context.Background(), srv.URL()+"/responses", respBody)
	ev := respEvents(t, resp.Body)
	resp.Body.Close()
	if len(ev) != 2+1+2+1000 || ev[2].name != "error" || ev[len(ev)-1].name != "response.output_text.delta" {
		t.Fatalf("%d events, %s", len(ev), names(ev[:5]))
	}
	resp = post(t, context.Background(), srv.URL()+"/responses", respBody)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), "slow down") {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
	if len(srv.Requests()) != 2 {
		t.Fatal("requests not recorded")
	}
}

func TestResponsesNonStreaming(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.NewServer()
	defer srv.Close()
	srv.Enqueue(fakeopenai.Script(fakeopenai.Text("a", "b"), fakeopenai.Citation("https://a.example/", "A"), fakeopenai.ToolCall("c1", "read", `{}`), fakeopenai.Usage(1, 2)))
	resp := post(t, context.Background(), srv.URL()+"/responses", `{"model":"m","input":"hi"}`)
	defer resp.Body.Close()
	var r struct {
		Object string `json:"object"`
		Status string `json:"status"`
		Output []struct {
			Type    string `json:"type"`
			CallID  string `json:"call_id"`
			Content []struct {
				Text        string `json:"text"`
				Annotations []struct {
					URL string `json:"url"`
				} `json:"annotations"`
			} `json:"content"`
		} `json:"output"`
		Usage struct {
			InputTokens int64 `json:"input_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if r.Object != "response" || r.Status != "completed" || len(r.Output) != 2 || r.Output[0].Content[0].Text != "ab" ||
		r.Output[0].Content[0].Annotations[0].URL != "https://a.example/" || r.Output[1].CallID != "c1" || r.Usage.InputTokens != 1 {
		t.Fatalf("%+v", r)
	}
	if in := srv.Requests()[0].Input; len(in) != 1 || in[0].Content != "hi" || in[0].Role != "user" {
		t.Fatalf("input %+v", in)
	}
}

// Reasoning sends a reasoning item whose encrypted content is only in
// its done event and the final response; a reasoning item in a request's
// input is decoded with its id, encrypted content and summary text.
func TestResponsesReasoning(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.NewServer()
	defer srv.Close()
	srv.Enqueue(
		fakeopenai.Script(fakeopenai.Reasoning("think first", "ENC1"), fakeopenai.Reasoning("", ""), fakeopenai.ToolCall("c1", "read", `{}`)),
		fakeopenai.Script(fakeopenai.Text("again")),
	)
	resp := post(t, context.Background(), srv.URL()+"/responses", respBody)
	ev := respEvents(t, resp.Body)
	resp.Body.Close()
	want := "created,in_progress," +
		"output_item.added,reasoning_summary_part.added,reasoning_summary_text.delta,reasoning_summary_text.done,reasoning_summary_part.done,output_item.done," +
		"output_item.added,output_item.done," +
		"output_item.added,function_call_arguments.delta,function_call_arguments.done,output_item.done,completed"
	if got := names(ev); got != want {
		t.Fatalf("events\n %s\nwant\n %s", got, want)
	}
	if it := ev[2].data["item"].(map[string]any); it["id"] != "rs_fake_1" || it["encrypted_content"] != nil {
		t.Fatalf("added item %v", it)
	}
	done := ev[7].data["item"].(map[string]any)
	sum := done["summary"].([]any)
	if done["id"] != "rs_fake_1" || done["type"] != "reasoning" || done["encrypted_content"] != "ENC1" ||
		len(sum) != 1 || sum[0].(map[string]any)["text"] != "think first" {
		t.Fatalf("done item %v", done)
	}
	if it := ev[9].data["item"].(map[string]any); it["id"] != "rs_fake_2" || it["encrypted_content"] != nil || len(it["summary"].([]any)) != 0 {
		t.Fatalf("empty reasoning item %v", it)
	}
	out := ev[len(ev)-1].data["response"].(map[string]any)["output"].([]any)
	if len(out) != 3 || out[0].(map[string]any)["encrypted_content"] != "ENC1" {
		t.Fatalf("final output %v", out)
	}

	body := `{"model":"m","stream":true,"include":["reasoning.encrypted_content"],"input":[
	 {"type":"message","role":"user","content":"hi"},
	 {"type":"reasoning","id":"rs_1","encrypted_content":"ENC1","summary":[{"type":"summary_text","text":"think first"}]},
	 {"type":"function_call","call_id":"c1","name":"read","arguments":"{}"}]}`
	resp = post(t, context.Background(), srv.URL()+"/responses", body)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	r := srv.Requests()[1]
	if in := r.Input; len(in) != 3 || in[1] != (fakeopenai.InputItem{Type: "reasoning", ID: "rs_1", EncryptedContent: "ENC1", Summary: "think first"}) {
		t.Fatalf("input %+v", in)
	}
	if inc, _ := r.JSON["include"].([]any); len(inc) != 1 || inc[0] != "reasoning.encrypted_content" {
		t.Fatalf("include %v", r.JSON["include"])
	}
}
