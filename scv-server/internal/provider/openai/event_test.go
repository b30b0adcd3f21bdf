package openai

import (
	"encoding/json"
	"reflect"
	"testing"
)

// eventSeeds are Responses events as servers send them, and a few they
// should not.
var eventSeeds = []string{
	`{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"tok ","sequence_number":5,"logprobs":[]}`,
	`{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"pa","sequence_number":9,"obfuscation":"x1"}`,
	`{"type":"response.output_text.delta","delta":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00 \ud800x"}`,
	` {"type" : "response.output_text.delta" , "delta" : "spaced", "output_index" : null } ` + "\n",
	`{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_1","type":"function_call","status":"in_progress","call_id":"call_1","name":"read","arguments":""},"sequence_number":3}`,
	`{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[{"type":"url_citation","start_index":0,"end_index":2,"url":"https://example.com/","title":"Example"}]}]}}`,
	`{"type":"response.output_text.annotation.added","item_id":"msg_1","output_index":0,"content_index":0,"annotation_index":0,"annotation":{"type":"url_citation","url":"https://a.example/","title":"A"}}`,
	`{"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":1,"arguments":"{\"path\":\"a\"}"}`,
	`{"type":"response.completed","response":{"id":"r","status":"completed","output":[],"usage":{"input_tokens":12,"output_tokens":3,"total_tokens":15}}}`,
	`{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":null}}`,
	`{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}`,
	`{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null,"sequence_number":2}`,
	`{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`,
	`{"type":"response.web_search_call.searching","item_id":"ws_1","output_index":2}`,
	`null`,
	`{"Type":"response.output_text.delta","delta":"folded"}`,
	`{"type":"a","type":"b"}`,
	`{"type":"response.output_text.delta","delta":5}`,
	`{"type":"response.output_text.delta","output_index":1.0}`,
	`{"type":"response.output_text.delta","delta":"\xff invalid"}`,
	`{"type":"x"} trailing`,
	`{"type":"x"`,
	`{"typ\u0065":"x"}`,
	`{"a":[[[[{"b":[1,2.5e-3,true,null,"s"]}]]]],"type":"x"}`,
	`{"type":"response.output_text.delta","delta":"x","output_index":99999999999999999999}`,
}

// checkEvent checks decodeEvent (fast path or not) gives what encoding/json
// gives, and that the fast path never accepts what encoding/json rejects.
func checkEvent(t *testing.T, data []byte) {
	var want respEvent
	werr := json.Unmarshal(data, &want)

	var fast respEvent
	d := chunkDecoder{data: data}
	if d.event(&fast, "response.output_text.delta", "msg_1") {
		if werr != nil {
			t.Fatalf("fast path accepted %q, encoding/json: %v", data, werr)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("fast path on %q:\n got %+v\nwant %+v", data, fast, want)
		}
	}
	got := respEvent{Type: "old", Delta: "old", Item: &respItem{ID: "old"}}
	err := decodeEvent(data, &got)
	if (err == nil) != (werr == nil) {
		t.Fatalf("decodeEvent(%q) error %v, encoding/json %v", data, err, werr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeEvent(%q):\n got %+v\nwant %+v", data, got, want)
	}
}

func TestDecodeEvent(t *testing.T) {
	t.Parallel()
	for _, s := range eventSeeds {
		checkEvent(t, []byte(s))
	}
	// The delta events take the fast path; the others do not.
	for i, s := range eventSeeds[:4] {
		var ev respEvent
		if d := (chunkDecoder{data: []byte(s)}); !d.event(&ev, "", "") {
			t.Errorf("fast path refused seed %d: %s", i, s)
		}
	}
	var ev respEvent
	if err := decodeEvent([]byte(eventSeeds[2]), &ev); err != nil {
		t.Fatal(err)
	}
	if want := "a\"b\\c/d\b\f\n\r\t\u00e9\U0001F600 \uFFFDx"; ev.Delta != want {
		t.Fatalf("delta %q, want %q", ev.Delta, want)
	}
	if err := decodeEvent([]byte(eventSeeds[4]), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Item == nil || ev.Item.CallID != "call_1" || ev.Item.Name != "read" || !ev.OutputIndex.Set || ev.OutputIndex.V != 1 {
		t.Fatalf("item event %+v %+v", ev, ev.Item)
	}
}

// A text delta after another costs one allocation: its text.
func TestDecodeEventAllocs(t *testing.T) {
	var ev respEvent
	data := []byte(eventSeeds[0])
	if n := testing.AllocsPerRun(100, func() {
		if err := decodeEvent(data, &ev); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Errorf("%v allocations per text delta", n)
	}
}

// FuzzEvent checks decodeEvent against encoding/json.
func FuzzEvent(f *testing.F) {
	for _, s := range eventSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkEvent)
}

func BenchmarkDecodeEvent(b *testing.B) {
	data := []byte(eventSeeds[0])
	var ev respEvent
	b.ReportAllocs()
	for b.Loop() {
		if err := decodeEvent(data, &ev); err != nil {
			b.Fatal(err)
		}
	}
}
