package openai

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// chunkSeeds are chunks as servers send them, and a few they should not.
var chunkSeeds = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"tok "},"logprobs":null,"finish_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{"content":"a\"b\\c\/d\b\f\n\r\t\u00e9\u2028\ud83d\ude00 \ud800x \udc00"}}]}`,
	`{"choices":[{"index":0,"delta":{"refusal":"no"},"finish_reason":"stop"}],"usage":null}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read","arguments":""}}]}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":\"a.txt\"}"}}]}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"function":{"name":"x"}},{"index":null,"id":"y"}]}}]}`,
	`{"id":"c","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13,"prompt_tokens_details":{"cached_tokens":0}}}`,
	`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"prompt_tokens_details":{"audio_tokens":0,"cached_tokens":7}}}`,
	`{"choices":[],"usage":{"prompt_tokens":10,"prompt_tokens_details":null}}`,
	`{"choices":[],"usage":{"prompt_tokens":10,"prompt_tokens_details":{"cached_tokens":null}}}`,
	`{"choices":[],"usage":{"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":2}}}`,
	`{"choices":[],"usage":{"prompt_tokens_details":{"Cached_Tokens":3}}}`,
	`{"choices":[],"usage":{"prompt_tokens_details":[]}}`,
	`{"choices":[{"index":1,"delta":{"content":"other choice"}},{"index":0,"delta":{"content":"x"}}]}`,
	` {"choices" : [ { "index" : 0 , "delta" : { "content" : "spaced" } } ] } ` + "\n",
	`{"error":{"message":"model overloaded","type":"server_error"}}`,
	`{"error":null,"choices":null}`,
	`{"error":"plain"}`,
	`null`,
	`{"Choices":[{"index":0,"delta":{"content":"folded key"}}]}`,
	`{"choices":[{"index":0,"DELTA":{"content":"x"},"delta":{"content":"y"}}]}`,
	`{"choices":[],"choices":[{"index":0}]}`,
	`{"choices":[{"index":1.0}]}`,
	`{"choices":[{"index":-0,"delta":{"content":null,"tool_calls":null}}]}`,
	`{"choices":[{"index":99999999999999999999}]}`,
	`{"choices":[{"index":0,"delta":{"content":5}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"\xff\xfe invalid utf-8"}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"x"}}]} trailing`,
	`{"choices":[{"index":0,"delta":{"content":"x"}}]`,
	`{"a":[[[[[[{"b":[1,2.5e-3,-0.1E+2,true,false,null,"s"]}]]]]]],"choices":[]}`,
	`{"x":{"y":"\u0000"},"choices":[{"index":0,"extra":{"content":"not this"}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"tab	inside"}}]}`,
	`{"ch\u006fices":[]}`,
	`{"ſchoices":[]}`,
}

// normChunk makes equivalent decodings equal: empty and nil slices, and an
// error of null and none.
func normChunk(c chunk) chunk {
	c.Choices = slices.Clone(c.Choices)
	if len(c.Choices) == 0 {
		c.Choices = nil
	}
	for i := range c.Choices {
		if len(c.Choices[i].Delta.ToolCalls) == 0 {
			c.Choices[i].Delta.ToolCalls = nil
		}
	}
	if string(c.Error) == "null" {
		c.Error = nil
	}
	return c
}

// dirtyChunk is a chunk left over from a previous decode.
func dirtyChunk(t testing.TB) chunk {
	var c chunk
	if err := decodeChunk([]byte(`{"choices":[{"index":3,"delta":{"content":"old","refusal":"old","tool_calls":[{"index":5,"id":"old","type":"old","function":{"name":"old","arguments":"old"}}]},"finish_reason":"old"},{"index":4}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// checkChunk checks decodeChunk (fast path or not) gives what encoding/json
// gives, and that the fast path never accepts what encoding/json rejects.
func checkChunk(t *testing.T, data []byte) {
	var want chunk
	werr := json.Unmarshal(data, &want)

	var fast chunk
	d := chunkDecoder{data: data}
	if d.chunk(&fast) {
		if werr != nil {
			t.Fatalf("fast path accepted %q, encoding/json: %v", data, werr)
		}
		if got, want := normChunk(fast), normChunk(want); !reflect.DeepEqual(got, want) {
			t.Fatalf("fast path on %q:\n got %+v\nwant %+v", data, got, want)
		}
	}

	got := dirtyChunk(t)
	err := decodeChunk(data, &got)
	if (err == nil) != (werr == nil) {
		t.Fatalf("decodeChunk(%q) error %v, encoding/json %v", data, err, werr)
	}
	if err == nil && !reflect.DeepEqual(normChunk(got), normChunk(want)) {
		t.Fatalf("decodeChunk(%q):\n got %+v\nwant %+v", data, normChunk(got), normChunk(want))
	}
}

func TestDecodeChunk(t *testing.T) {
	t.Parallel()
	for _, s := range chunkSeeds {
		checkChunk(t, []byte(s))
	}

	// The common shapes take the fast path.
	for _, s := range chunkSeeds[:9] {
		var c chunk
		if d := (chunkDecoder{data: []byte(s)}); !d.chunk(&c) {
			t.Errorf("fast path refused %s", s)
		}
	}

	var c chunk
	if err := decodeChunk([]byte(chunkSeeds[1]), &c); err != nil {
		t.Fatal(err)
	}
	if want := "a\"b\\c/d\b\f\n\r\t\u00e9\u2028\U0001F600 \uFFFDx \uFFFD"; c.Choices[0].Delta.Content != want {
		t.Fatalf("content %q, want %q", c.Choices[0].Delta.Content, want)
	}
	if err := decodeChunk([]byte(chunkSeeds[5]), &c); err != nil {
		t.Fatal(err)
	}
	if tc := c.Choices[0].Delta.ToolCalls; len(tc) != 2 || tc[0].Index.Set || tc[1].Index.Set || tc[0].Function.Name != "x" || tc[1].ID != "y" {
		t.Fatalf("tool calls %+v", tc)
	}
}

func TestChunkErrorMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`{"error":{"message":"model overloaded","type":"server_error"}}`, "model overloaded"},
		{`{"error":{"message":["a","b"]}}`, "a, b"},
		{`{"error":"plain"}`, "plain"},
		{`{"error":{"code":503}}`, `{"code":503}`},
	} {
		var c chunk
		if err := decodeChunk([]byte(tc.in), &c); err != nil {
			t.Fatal(err)
		}
		if !c.hasError() || c.errorMessage() != tc.want {
			t.Errorf("%s: error %v %q, want %q", tc.in, c.hasError(), c.errorMessage(), tc.want)
		}
	}
	var c chunk
	if err := decodeChunk([]byte(`{"error":null,"choices":[]}`), &c); err != nil || c.hasError() {
		t.Fatalf("null error: %v %v", err, c.hasError())
	}
}

// The fast path allocates only the strings it returns.
func TestDecodeChunkAllocs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
	}{
		{chunkSeeds[0], 1},
		{chunkSeeds[4], 1},
		{`{"choices":[{"index":0,"delta":{},"finish_reason":null}]}`, 0},
	} {
		var c chunk
		data := []byte(tc.in)
		if n := testing.AllocsPerRun(100, func() {
			if err := decodeChunk(data, &c); err != nil {
				t.Fatal(err)
			}
		}); n > tc.want {
			t.Errorf("%s: %v allocations, want %v", tc.in, n, tc.want)
		}
	}
}

// FuzzChunk checks decodeChunk against encoding/json.
func FuzzChunk(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkChunk)
}

func BenchmarkDecodeChunk(b *testing.B) {
	data := []byte(chunkSeeds[0])
	var c chunk
	b.ReportAllocs()
	for b.Loop() {
		if err := decodeChunk(data, &c); err != nil {
			b.Fatal(err)
		}
	}
}
