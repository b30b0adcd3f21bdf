// Package netguard decides which network addresses and ports an outbound
// fetch may reach, and enforces it where the connection is made: a
// checking resolver resolves a host name once and refuses it if any
// address is refused, and a dialer connects only to the checked addresses
// and allowed ports, re-checking each one in a net.Dialer Control hook. IP literals are parsed here in every notation
// inet_aton accepts, so none reaches a resolver as a "name".
package netguard

import (
	"fmt"
	"net/netip"
)

// rangeRule is one refused range with the reason a person reads.
type rangeRule struct {
	prefix netip.Prefix
	reason string
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// refusedV4 are the IPv4 ranges that are not globally reachable (IANA
// IPv4 special-purpose registry), most specific first so the reason is
// the most precise one.
var refusedV4 = []rangeRule{
	{mustPrefix("169.254.169.254/32"), "the cloud metadata address (link-local)"},
	{mustPrefix("255.255.255.255/32"), "the broadcast address"},
	{mustPrefix("0.0.0.0/8"), `"this network" (0.0.0.0/8)`},
	{mustPrefix("10.0.0.0/8"), "private (RFC 1918, 10.0.0.0/8)"},
	{mustPrefix("100.64.0.0/10"), "shared address space (CGNAT, 100.64.0.0/10)"},
	{mustPrefix("127.0.0.0/8"), "loopback (127.0.0.0/8)"},
	{mustPrefix("169.254.0.0/16"), "link-local (169.254.0.0/16)"},
	{mustPrefix("172.16.0.0/12"), "private (RFC 1918, 172.16.0.0/12)"},
	{mustPrefix("192.0.0.0/24"), "IETF protocol assignments (192.0.0.0/24)"},
	{mustPrefix("192.0.2.0/24"), "documentation (TEST-NET-1, 192.0.2.0/24)"},
	{mustPrefix("192.88.99.0/24"), "the deprecated 6to4 relay anycast range (192.88.99.0/24)"},
	{mustPrefix("192.168.0.0/16"), "private (RFC 1918, 192.168.0.0/16)"},
	{mustPrefix("198.18.0.0/15"), "benchmarking (198.18.0.0/15)"},
	{mustPrefix("198.51.100.0/24"), "documentation (TEST-NET-2, 198.51.100.0/24)"},
	{mustPrefix("203.0.113.0/24"), "documentation (TEST-NET-3, 203.0.113.0/24)"},
	{mustPrefix("224.0.0.0/4"), "multicast (224.0.0.0/4)"},
	{mustPrefix("240.0.0.0/4"), "reserved (240.0.0.0/4)"},
}

// refusedV6 are the IPv6 ranges refused outright. The forms that embed an
// IPv4 address (v4-mapped, NAT64 64:ff9b::/96, 6to4, Teredo) are not
// here: they are unwrapped and the embedded address decides.
var refusedV6 = []rangeRule{
	{mustPrefix("::1/128"), "IPv6 loopback (::1)"},
	{mustPrefix("::/128"), "the IPv6 unspecified address (::)"},
	{mustPrefix("::/96"), "IPv4-compatible IPv6 (deprecated, ::/96)"},
	{mustPrefix("64:ff9b:1::/48"), "local-use NAT64 (64:ff9b:1::/48)"},
	{mustPrefix("100::/64"), "IPv6 discard-only (100::/64)"},
	{mustPrefix("2001:db8::/32"), "IPv6 documentation (2001:db8::/32)"},
	{mustPrefix("3fff::/20"), "IPv6 documentation (3fff::/20)"},
	{mustPrefix("5f00::/16"), "IPv6 segment routing (5f00::/16)"},
	{mustPrefix("fc00::/7"), "IPv6 unique-local (fc00::/7)"},
	{mustPrefix("fe80::/10"), "IPv6 link-local (fe80::/10)"},
	{mustPrefix("fec0::/10"), "IPv6 site-local (deprecated, fec0::/10)"},
	{mustPrefix("ff00::/8"), "IPv6 multicast (ff00::/8)"},
}

var (
	nat64     = mustPrefix("64:ff9b::/96")
	sixToFour = mustPrefix("2002::/16")
	teredo    = mustPrefix("2001::/32")
	ietf6     = mustPrefix("2001::/23")
	global6   = mustPrefix("2000::/3")
)

// Refusal returns why a is not a public address, or "" when it is. It is
// the policy without exceptions; a zone is ignored.
func Refusal(a netip.Addr) string {
	if !a.IsValid() {
		return "not a valid IP address"
	}
	a = a.WithZone("")
	if a.Is4In6() {
		if r := Refusal(a.Unmap()); r != "" {
			return "IPv4-mapped " + r
		}
		return ""
	}
	if a.Is4() {
		for _, r := range refusedV4 {
			if r.prefix.Contains(a) {
				return r.reason
			}
		}
		return ""
	}
	for _, r := range refusedV6 {
		if r.prefix.Contains(a) {
			return r.reason
		}
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return embedded("NAT64", v4(b[12:16]))
	case sixToFour.Contains(a):
		return embedded("6to4", v4(b[2:6]))
	case teredo.Contains(a):
		// Teredo: the server's IPv4 address in bits 32-63, the client's
		// in bits 96-127 with every bit inverted.
		if r := embedded("Teredo server", v4(b[4:8])); r != "" {
			return r
		}
		var c [4]byte
		for i := range c {
			c[i] = b[12+i] ^ 0xff
		}
		return embedded("Teredo client", netip.AddrFrom4(c))
	case ietf6.Contains(a):
		return "IPv6 IETF protocol assignments (2001::/23)"
	case !global6.Contains(a):
		return "not IPv6 global unicast (outside 2000::/3)"
	}
	return ""
}

func v4(b []byte) netip.Addr { return netip.AddrFrom4([4]byte(b)) }

func embedded(form string, inner netip.Addr) string {
	if r := Refusal(inner); r != "" {
		return fmt.Sprintf("%s IPv6 embedding %s, which is %s", form, inner, r)
	}
	return ""
}
