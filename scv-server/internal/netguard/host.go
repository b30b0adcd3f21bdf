package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Host is a URL host in canonical form: an IP address, or a lower-case
// ASCII (punycode) DNS name without a trailing dot.
type Host struct {
	// Addr is set when the host is an IP literal in any notation.
	Addr netip.Addr
	// Name is set when the host is a DNS name.
	Name string
}

// String returns the host as it goes into a URL (IPv6 in brackets).
func (h Host) String() string {
	if h.Addr.IsValid() {
		if h.Addr.Is6() {
			return "[" + h.Addr.String() + "]"
		}
		return h.Addr.String()
	}
	return h.Name
}

// idnaProfile maps and validates names the way a lookup does (UTS 46),
// but allows underscores, which some real host names carry.
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.StrictDomainName(false),
	idna.VerifyDNSLength(true),
	idna.Transitional(false),
)

// ParseHost parses a URL host (as url.URL.Hostname returns it, or with
// IPv6 brackets). An IPv4 literal is accepted in every notation inet_aton
// accepts (decimal 2130706433, octal 0177.0.0.1, hex 0x7f.1, short 127.1,
// a trailing dot), so that none of them can pass as a name that a system
// resolver would turn into an address. A host whose last label is numeric
// but is no valid IPv4 address is refused for the same reason. A non-ASCII
// name is converted to punycode, and the result is parsed again: width
// mapping can turn "１２７.０.０.１" into an IP literal.
func ParseHost(host string) (Host, error) {
	if host == "" {
		return Host{}, errors.New("the URL has no host")
	}
	if strings.HasPrefix(host, "[") {
		if !strings.HasSuffix(host, "]") {
			return Host{}, fmt.Errorf("host %q has an unclosed bracket", host)
		}
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil || !a.Is6() {
			return Host{}, fmt.Errorf("host %q is not a valid bracketed IPv6 address", host)
		}
		return Host{Addr: a}, nil
	}
	if strings.Contains(host, ":") {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() {
			return Host{}, fmt.Errorf("host %q is not a valid IPv6 address", host)
		}
		return Host{Addr: a}, nil
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Is4() {
		return Host{Addr: a}, nil // the common canonical form, without the IDNA pass
	}
	if !utf8.ValidString(host) {
		return Host{}, fmt.Errorf("host %q is not valid UTF-8", host)
	}
	ascii, err := idnaProfile.ToASCII(host)
	if err != nil {
		return Host{}, fmt.Errorf("host %q is not a valid host name: %w", host, err)
	}
	ascii = strings.ToLower(ascii)
	trimmed := strings.TrimSuffix(ascii, ".")
	if trimmed == "" {
		return Host{}, fmt.Errorf("host %q is not a valid host name", host)
	}
	labels := strings.Split(trimmed, ".")
	if numericLabel(labels[len(labels)-1]) {
		a, ok := ParseIPv4(trimmed)
		if !ok {
			return Host{}, fmt.Errorf("host %q is neither a valid IPv4 address nor a host name (its last label is a number)", host)
		}
		return Host{Addr: a}, nil
	}
	for _, l := range labels {
		if l == "" {
			return Host{}, fmt.Errorf("host %q has an empty label", host)
		}
		if len(l) > 63 {
			return Host{}, fmt.Errorf("host %q has a label longer than 63 characters", host)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return Host{}, fmt.Errorf("host %q has the character %q, which a host name cannot hold", host, c)
			}
		}
	}
	if len(trimmed) > 253 {
		return Host{}, fmt.Errorf("host %q is longer than 253 characters", host)
	}
	return Host{Name: trimmed}, nil
}

// numericLabel reports whether l is a number inet_aton could read: decimal
// digits, or 0x followed by hex digits (possibly none).
func numericLabel(l string) bool {
	if l == "" {
		return false
	}
	if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		for i := 2; i < len(l); i++ {
			if !isHex(l[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// ParseIPv4 parses s the way inet_aton does: one to four parts separated
// by dots, each decimal, octal (leading 0) or hex (leading 0x); the last
// part fills the remaining bytes (a.b.c.d, a.b.c with c 16 bits, a.b with
// b 24 bits, a alone 32 bits). A trailing dot is accepted, as resolvers
// do.
func ParseIPv4(s string) (netip.Addr, bool) {
	s = strings.TrimSuffix(s, ".")
	parts := strings.Split(s, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := parseAtonPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	last := vals[len(vals)-1]
	lead := vals[:len(vals)-1]
	for _, v := range lead {
		if v > 0xff {
			return netip.Addr{}, false
		}
	}
	if last >= 1<<(8*(4-len(lead))) {
		return netip.Addr{}, false
	}
	var n uint32
	for i, v := range lead {
		n |= uint32(v) << (24 - 8*i)
	}
	n |= uint32(last)
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

func parseAtonPart(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base, digits := 10, p
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, digits = 16, p[2:]
		if digits == "" {
			return 0, true // inet_aton reads "0x" as 0
		}
	case len(p) > 1 && p[0] == '0':
		base, digits = 8, p[1:]
	}
	// More than 16 hex digits (or their decimal/octal equivalent) cannot
	// fit; ParseUint reports the overflow.
	v, err := strconv.ParseUint(digits, base, 64)
	if err != nil || v > 0xffffffff {
		return 0, false
	}
	return v, true
}
