package wechat

import "testing"

func TestParseApproval(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]*Approval{
		"yes abcde":        {ID: "abcde", Allow: true},
		"  No ABCDE \n":    {ID: "abcde"},
		"y qwert.":         {ID: "qwert", Allow: true},
		"deny zzzzz":       {ID: "zzzzz"},
		"yes abcde ok":     nil,
		"yes, do it":       nil,
		"yes abcd":         nil,
		"maybe abcde":      nil,
		"please yes abcde": nil,
	} {
		got, ok := ParseApproval(in)
		if (want == nil) == ok || (want != nil && got != *want) {
			t.Errorf("ParseApproval(%q) = %+v, %v", in, got, ok)
		}
	}
}

func FuzzParseApproval(f *testing.F) {
	f.Add("yes abcde")
	f.Add("no ABCDE!")
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := ParseApproval(s)
		if ok && len(a.ID) != 5 {
			t.Fatalf("id %q", a.ID)
		}
	})
}
