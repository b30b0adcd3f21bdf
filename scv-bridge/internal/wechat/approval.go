package wechat

import (
	"regexp"
	"strings"
)

// Approval is an owner's answer to an approval request, typed as text
// because WeChat has no buttons: "yes abcde" or "no abcde".
type Approval struct {
	// ID is the request's short code.
	ID string
	// Allow is true for yes.
	Allow bool
}

var approvalRE = regexp.MustCompile(`^(?i)(yes|y|allow|no|n|deny)\s+([a-z]{5})[.!]?$`)

// ParseApproval reads a message that is only an approval answer. The core
// must check the id against its pending requests and the sender against
// the owner, and never pass a matched message to the model.
func ParseApproval(text string) (Approval, bool) {
	m := approvalRE.FindStringSubmatch(strings.TrimSpace(text))
	if m == nil {
		return Approval{}, false
	}
	switch strings.ToLower(m[1]) {
	case "yes", "y", "allow":
		return Approval{ID: strings.ToLower(m[2]), Allow: true}, true
	}
	return Approval{ID: strings.ToLower(m[2])}, true
}
