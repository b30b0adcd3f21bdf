package protocol

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/testkit/golden"
)

// seedCorpora is the seed corpus of each fuzz target, committed under
// testdata/fuzz/<FuzzName>/ so a plain go test runs them. Run
// go test ./protocol -run TestFuzzSeedCorpora -update to rewrite them.
func seedCorpora(t testing.TB) map[string]map[string]string {
	str := func(s string) string { return "string(" + strconv.Quote(s) + ")\n" }
	raw := func(s string) string { return "[]byte(" + strconv.Quote(s) + ")\n" }
	u16 := func(n uint16) string { return "uint16(" + strconv.Itoa(int(n)) + ")\n" }
	u8 := func(n uint8) string { return "uint8(" + strconv.Itoa(int(n)) + ")\n" }

	decode := map[string]string{
		"not-json":           raw(`{"type":`),
		"array":              raw(`[{"type":"turn.start","request_id":"1"}]`),
		"numeric-request-id": raw(`{"type":"turn.start","request_id":3,"session_id":"s","prompt":"hi"}`),
		"wrong-field-type":   raw(`{"type":"turn.start","request_id":"1","session_id":"s","prompt":5}`),
		"case-folded-keys":   raw(`{"TYPE":"turn.start","Request_ID":"1","Prompt":"\ud800\u2028"}`),
		"invalid-utf8":       raw("{\"type\":\"turn.start\",\"request_id\":\"\xff\",\"prompt\":\"a\xc0\"}"),
		"huge-number":        raw(`{"type":"session.start","request_id":"1","cwd":"/w","delegation_depth":1e400}`),
		"unknown-fields":     raw(`{"type":"session.pause","request_id":"7","session_id":"s","paused":true,"x":[{}]}`),
	}
	for _, g := range readGolden(t, clientGolden) {
		name := "golden-" + PeekType(g.text)
		if _, dup := decode[name]; dup {
			name += "-" + strconv.Itoa(g.num)
		}
		decode[name] = raw(string(g.text))
	}

	return map[string]map[string]string{
		"FuzzAppendString": {
			"control-chars":  str("\x00\x01\b\t\n\f\r\x1f\x7f"),
			"quotes":         str(`say "hi" \ and \\ "\u0041"`),
			"invalid-utf8":   str("ok \xff\xfe truncated \xe2\x82 surrogate \xed\xa0\x80"),
			"line-separator": str("a\u2028b\u2029c"),
			"emoji":          str("🚀 👩‍👩‍👧 🇺🇦 \U0010FFFF"),
			"html":           str("<script>&</script>"),
		},
		"FuzzFrameReader": {
			"mixed":           raw("{}\n{\"a\":1}\r\n\n  \n") + u16(8) + raw("\x00"),
			"oversized":       raw(strings.Repeat("x", 100)+"\n{}\n") + u16(10) + raw("\x03\xc8\x07"),
			"exact-limit":     raw(strings.Repeat("a", 20)+"\r\n"+strings.Repeat("b", 20)+"\n"+strings.Repeat("c", 20)) + u16(20) + raw(""),
			"limit-plus-one":  raw(strings.Repeat("a", 21)+"\r\n"+strings.Repeat("b", 21)) + u16(20) + raw("\x01"),
			"carriage-return": raw("\r\r\r\n\n\r\n\r") + u16(0) + raw("\x00"),
			"small-buffer":    raw("1234567890123456\n12345678901234567\r\n") + u16(14) + raw("\x0f\x10\x11"),
		},
		"FuzzDecodeClientMessage": decode,
		"FuzzStrictMembers": {
			"duplicate":         raw(`{"type":"turn.start","request_id":"3","session_id":"s","prompt":"a","prompt":"b"}`) + u8(1),
			"escaped-duplicate": raw(`{"a":{"b":1,"\u0062":2}}`) + u8(0),
			"wrong-case":        raw(`{"type":"initialize","request_id":"1","protocol_version":3,"client":{"Name":"x"}}`) + u8(0),
			"unicode-folding":   raw(`{"type":"session.clear","request_id":"1","ſession_id":"s"}`) + u8(0),
			"strings":           raw(`{"s":"a\"b\\","t":"\"","u":[1,2.5e3,true,null,"x",{"k":[]}]}`) + u8(3),
		},
	}
}

func TestFuzzSeedCorpora(t *testing.T) {
	t.Parallel()
	for fuzz, files := range seedCorpora(t) {
		dir := filepath.Join("testdata", "fuzz", fuzz)
		for name, body := range files {
			golden.Equal(t, filepath.Join(dir, name), "go test fuzz v1\n"+body)
		}
	}
}
