package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/scv-cli/scv/shared/config"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRefusal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		want string // substring of the reason; "" means public
	}{
		// IPv4 public
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"93.184.216.34", ""},
		{"172.32.0.1", ""},
		{"100.128.0.1", ""},
		{"198.20.0.1", ""},
		{"223.255.255.255", ""},
		// IPv4 refused
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"100.64.0.1", "CGNAT"},
		{"100.127.255.255", "CGNAT"},
		{"100.100.100.200", "CGNAT"},
		{"169.254.169.254", "metadata"},
		{"169.254.1.1", "link-local"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "broadcast"},
		{"0.0.0.0", "this network"},
		{"0.1.2.3", "this network"},
		{"192.0.0.8", "IETF"},
		{"192.0.2.1", "documentation"},
		{"198.51.100.7", "documentation"},
		{"203.0.113.9", "documentation"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"192.88.99.1", "6to4 relay"},
		// IPv6 public
		{"2606:4700:4700::1111", ""},
		{"2a00:1450:4001:81c::200e", ""},
		// IPv6 refused
		{"::1", "loopback"},
		{"::", "unspecified"},
		{"fc00::1", "unique-local"},
		{"fd00:ec2::254", "unique-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast"},
		{"2001:db8::1", "documentation"},
		{"3fff::1", "documentation"},
		{"100::1", "discard"},
		{"2001:2::1", "IETF"},
		{"4000::1", "outside 2000::/3"},
		{"5f00::1", "segment routing"},
		// IPv4-mapped
		{"::ffff:127.0.0.1", "IPv4-mapped loopback"},
		{"::ffff:169.254.169.254", "metadata"},
		{"::ffff:10.0.0.1", "private"},
		{"::ffff:8.8.8.8", ""},
		// IPv4-compatible (deprecated): refused whatever it embeds
		{"::127.0.0.1", "IPv4-compatible"},
		{"::169.254.169.254", "IPv4-compatible"},
		{"::8.8.8.8", "IPv4-compatible"},
		// NAT64
		{"64:ff9b::127.0.0.1", "NAT64 IPv6 embedding 127.0.0.1"},
		{"64:ff9b::a9fe:a9fe", "NAT64 IPv6 embedding 169.254.169.254"},
		{"64:ff9b::10.0.0.1", "NAT64"},
		{"64:ff9b::8.8.8.8", ""},
		{"64:ff9b:1::8.8.8.8", "local-use NAT64"},
		{"64:ff9b:1::a9fe:a9fe", "local-use NAT64"},
		// 6to4
		{"2002:7f00:1::1", "6to4 IPv6 embedding 127.0.0.1"},
		{"2002:a9fe:a9fe::", "6to4 IPv6 embedding 169.254.169.254"},
		{"2002:c0a8:101::1", "6to4 IPv6 embedding 192.168.1.1"},
		{"2002:808:808::1", ""},
		// Teredo: server 65.54.227.120 (public); client obfuscated
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo client IPv6 embedding 192.0.2.45"}, // RFC 4380 example
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo client IPv6 embedding 127.0.0.1"},  // ^ ff 7f 00 00 01
		{"2001:0:4136:e378::5601:5601", "Teredo client IPv6 embedding 169.254.169.254"},     // a9fe a9fe inverted
		{"2001:0:7f00:1::f7f7:f7f7", "Teredo server IPv6 embedding 127.0.0.1"},
		{"2001:0:4136:e378::f7f7:f7f7", ""}, // client 8.8.8.8
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			got := Refusal(netip.MustParseAddr(tc.addr))
			if tc.want == "" && got != "" {
				t.Fatalf("Refusal(%s) = %q, want public", tc.addr, got)
			}
			if tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("Refusal(%s) = %q, want it to mention %q", tc.addr, got, tc.want)
			}
		})
	}
}

func TestParseHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		addr    string // IP literal expected
		name    string // name expected
		wantErr string
	}{
		{in: "127.0.0.1", addr: "127.0.0.1"},
		{in: "2130706433", addr: "127.0.0.1"},
		{in: "0177.0.0.1", addr: "127.0.0.1"},
		{in: "0x7f.1", addr: "127.0.0.1"},
		{in: "0x7f000001", addr: "127.0.0.1"},
		{in: "0X7F.0.0.1", addr: "127.0.0.1"},
		{in: "127.1", addr: "127.0.0.1"},
		{in: "127.0.1", addr: "127.0.0.1"},
		{in: "127.0.0.1.", addr: "127.0.0.1"},
		{in: "0", addr: "0.0.0.0"},
		{in: "0x", addr: "0.0.0.0"},
		{in: "0xa9.0376.43518", addr: "169.254.169.254"},
		{in: "2852039166", addr: "169.254.169.254"},
		{in: "0251.0376.0251.0376", addr: "169.254.169.254"},
		{in: "10.0x00ffffff", addr: "10.255.255.255"},
		{in: "[::1]", addr: "::1"},
		{in: "::1", addr: "::1"},
		{in: "[::ffff:127.0.0.1]", addr: "::ffff:127.0.0.1"},
		{in: "[fe80::1%eth0]", addr: "fe80::1%eth0"},
		{in: "１２７.０.０.１", addr: "127.0.0.1"},
		{in: "Example.COM", name: "example.com"},
		{in: "example.com.", name: "example.com"},
		{in: "münchen.de", name: "xn--mnchen-3ya.de"},
		{in: "xn--mnchen-3ya.de", name: "xn--mnchen-3ya.de"},
		{in: "my_host.example.com", name: "my_host.example.com"},
		{in: "1.2.3.example", name: "1.2.3.example"},
		{in: "0x1g.example", name: "0x1g.example"},
		{in: "", wantErr: "no host"},
		{in: "256.0.0.1", wantErr: "neither a valid IPv4"},
		{in: "1.2.3.4.5", wantErr: "neither a valid IPv4"},
		{in: "4294967296", wantErr: "neither a valid IPv4"},
		{in: "08.0.0.1", wantErr: "neither a valid IPv4"},
		{in: "1..1", wantErr: "not a valid host name"},
		{in: "127.0.0.256", wantErr: "neither a valid IPv4"},
		{in: "1.16777216", wantErr: "neither a valid IPv4"},
		{in: "1.2.65536", wantErr: "neither a valid IPv4"},
		{in: "foo.123", wantErr: "last label is a number"},
		{in: "[127.0.0.1]", wantErr: "bracketed IPv6"},
		{in: "[::1", wantErr: "unclosed"},
		{in: "1:2", wantErr: "not a valid IPv6"},
		{in: "a..b", wantErr: "not a valid host name"},
		{in: "exa mple.com", wantErr: "cannot hold"},
		{in: "xn--zz.com", wantErr: "not a valid host name"},
		{in: strings.Repeat("a", 64) + ".com", wantErr: "not a valid host name"},
		{in: "\xff.com", wantErr: "not valid UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			h, err := ParseHost(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseHost(%q) = %+v, %v; want error with %q", tc.in, h, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseHost(%q): %v", tc.in, err)
			}
			if tc.addr != "" {
				want := netip.MustParseAddr(tc.addr)
				if h.Addr != want || h.Name != "" {
					t.Fatalf("ParseHost(%q) = %+v, want address %s", tc.in, h, want)
				}
				return
			}
			if h.Name != tc.name || h.Addr.IsValid() {
				t.Fatalf("ParseHost(%q) = %+v, want name %q", tc.in, h, tc.name)
			}
		})
	}
}

// TestLiteralNotationsRefused: every notation of a refused address is
// refused by the dialer's resolve step, without a lookup.
func TestLiteralNotationsRefused(t *testing.T) {
	t.Parallel()
	d := &Dialer{Resolver: failResolver{t}}
	for _, host := range []string{
		"127.0.0.1", "2130706433", "0177.0.0.1", "0x7f.1", "127.1", "127.0.0.1.", "0x7f000001",
		"017700000001", "0", "0.0.0.0", "169.254.169.254", "0xa9fea9fe", "2852039166", "0251.0376.0251.0376",
		"10.1", "192.168.257", "[::1]", "::1", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::127.0.0.1]",
		"[64:ff9b::a9fe:a9fe]", "[2002:a9fe:a9fe::1]", "[2001:0:4136:e378::5601:5601]", "[fe80::1%eth0]",
		"[fd00:ec2::254]", "１２７.０.０.１", "localhost", "LOCALHOST.", "api.localhost", "metadata.google.internal",
	} {
		_, err := d.Resolve(context.Background(), host, 80)
		var re *RefusedError
		if !errors.As(err, &re) {
			t.Errorf("Resolve(%q) = %v, want a RefusedError", host, err)
		}
	}
}

type failResolver struct{ t *testing.T }

func (f failResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	f.t.Error("the resolver was asked although the host is a literal or refused name")
	return nil, errors.New("no lookups")
}

// mapResolver answers from a table.
type mapResolver map[string][]string

func (m mapResolver) LookupNetIP(_ context.Context, _ string, host string) ([]netip.Addr, error) {
	addrs, ok := m[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func TestResolveNames(t *testing.T) {
	t.Parallel()
	d := &Dialer{Resolver: mapResolver{
		"public.test": {"8.8.8.8", "2606:4700:4700::1111"},
		"mixed.test":  {"8.8.8.8", "10.0.0.1"},
		"mapped.test": {"::ffff:8.8.8.8", "8.8.8.8"},
		"meta.test":   {"::ffff:169.254.169.254"},
		"empty.test":  {},
	}}
	got, err := d.Resolve(context.Background(), "public.test", 443)
	if err != nil || len(got) != 2 {
		t.Fatalf("public.test: %v %v", got, err)
	}
	got, err = d.Resolve(context.Background(), "mapped.test", 443)
	if err != nil || len(got) != 1 || got[0] != netip.MustParseAddr("8.8.8.8") {
		t.Fatalf("mapped.test: %v %v (want one unmapped address)", got, err)
	}
	for _, name := range []string{"mixed.test", "meta.test"} {
		_, err = d.Resolve(context.Background(), name, 443)
		var re *RefusedError
		if !errors.As(err, &re) || re.Host != name {
			t.Fatalf("%s: %v, want RefusedError naming the host", name, err)
		}
		if !strings.Contains(err.Error(), "host "+name+" resolves to") {
			t.Errorf("%s: message %q", name, err)
		}
	}
	if _, err = d.Resolve(context.Background(), "empty.test", 443); err == nil || !strings.Contains(err.Error(), "no addresses") {
		t.Fatalf("empty.test: %v", err)
	}
	if _, err = d.Resolve(context.Background(), "missing.test", 443); err == nil || !strings.Contains(err.Error(), "cannot resolve") {
		t.Fatalf("missing.test: %v", err)
	}
}

func TestPolicyExceptionsArePortExact(t *testing.T) {
	t.Parallel()
	p := &Policy{Exceptions: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:8080")}}
	if err := p.Check(netip.MustParseAddrPort("127.0.0.1:8080")); err != nil {
		t.Errorf("exception refused: %v", err)
	}
	if err := p.Check(netip.MustParseAddrPort("[::ffff:127.0.0.1]:8080")); err != nil {
		t.Errorf("mapped form of the exception refused: %v", err)
	}
	for _, ap := range []string{"127.0.0.1:8081", "127.0.0.2:8080", "[::1]:8080", "10.0.0.1:8080"} {
		if err := p.Check(netip.MustParseAddrPort(ap)); err == nil {
			t.Errorf("%s allowed", ap)
		}
	}
	open := &Policy{AllowPrivate: true}
	if err := open.Check(netip.MustParseAddrPort("127.0.0.1:8000")); err != nil {
		t.Errorf("AllowPrivate: %v", err)
	}
	if err := open.CheckName("localhost"); err != nil {
		t.Errorf("AllowPrivate name: %v", err)
	}
	var nilPolicy *Policy
	if err := nilPolicy.Check(netip.MustParseAddrPort("8.8.8.8:443")); err != nil {
		t.Errorf("nil policy refuses public: %v", err)
	}
	if err := nilPolicy.Check(netip.MustParseAddrPort("10.0.0.1:443")); err == nil {
		t.Error("nil policy allows private")
	}
}

// TestDialer connects through the exception to a loopback server, and is
// refused on another loopback port and by the Control hook.
func TestDialer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("the refused server was reached") }))
	defer other.Close()
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	d := &Dialer{
		// Every port, so that the address is what refuses the other server.
		Policy:   &Policy{Exceptions: []netip.AddrPort{ap}, Ports: []PortRange{{1, 65535}}},
		Resolver: mapResolver{"public.test": {"127.0.0.1"}},
	}
	tr := &http.Transport{DialContext: d.DialContext, Proxy: nil}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for _, u := range []string{srv.URL, fmt.Sprintf("http://public.test:%d/", ap.Port())} {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "ok" {
			t.Fatalf("GET %s: %q", u, b)
		}
	}
	otherPort := netip.MustParseAddrPort(other.Listener.Addr().String()).Port()
	for _, u := range []string{other.URL, fmt.Sprintf("http://public.test:%d/", otherPort), fmt.Sprintf("http://2130706433:%d/", otherPort)} {
		_, err := client.Get(u)
		var re *RefusedError
		if !errors.As(err, &re) {
			t.Fatalf("GET %s: %v, want RefusedError", u, err)
		}
	}
	if _, err := d.DialContext(context.Background(), "udp", srv.Listener.Addr().String()); err == nil {
		t.Error("udp dial allowed")
	}
	// Defense in depth: the Control hook refuses what the resolve step
	// would have refused, whatever the caller passes.
	if err := d.control("tcp4", "169.254.169.254:80", nil); err == nil {
		t.Error("control allowed the metadata address")
	}
	if err := d.control("tcp4", ap.String(), nil); err != nil {
		t.Errorf("control refused the exception: %v", err)
	}
	if err := d.control("tcp4", "garbage", nil); err == nil {
		t.Error("control allowed an unparsable address")
	}
}

// FuzzParseHost: no panic; a parsed name is canonical lower-case ASCII and
// parses to itself; a parsed literal has an address Refusal can judge.
func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "0x7f.1", "0177.0.0.1", "2130706433", "[::1]", "fe80::1%eth0", "münchen.de",
		"１２７.０.０.１", "example.com.", "foo.123", "0x", "1..2", "xn--zz", "[::ffff:1.2.3.4]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHost(s)
		if err != nil {
			return
		}
		if h.Addr.IsValid() == (h.Name != "") {
			t.Fatalf("ParseHost(%q) = %+v: want exactly one of address and name", s, h)
		}
		if h.Addr.IsValid() {
			_ = Refusal(h.Addr)
			return
		}
		if !utf8.ValidString(h.Name) || strings.ToLower(h.Name) != h.Name {
			t.Fatalf("ParseHost(%q) name %q is not canonical", s, h.Name)
		}
		for i := 0; i < len(h.Name); i++ {
			if h.Name[i] >= 0x80 {
				t.Fatalf("ParseHost(%q) name %q is not ASCII", s, h.Name)
			}
		}
		again, err := ParseHost(h.Name)
		if err != nil || again != h {
			t.Fatalf("ParseHost(%q) = %q, which parses to %+v, %v", s, h.Name, again, err)
		}
	})
}

// FuzzParseIPv4 checks ParseIPv4 against the canonical dotted form: a
// dotted quad netip accepts must parse to the same address.
func FuzzParseIPv4(f *testing.F) {
	for _, s := range []string{"1.2.3.4", "0x7f.1", "4294967295", "255.255.255.255", "01.02.03.04"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := ParseIPv4(s)
		if want, err := netip.ParseAddr(s); err == nil && want.Is4() {
			if !ok || a != want {
				t.Fatalf("ParseIPv4(%q) = %v, %v; netip says %v", s, a, ok, want)
			}
		}
		if ok && !a.Is4() {
			t.Fatalf("ParseIPv4(%q) = %v, not IPv4", s, a)
		}
	})
}

// flipResolver answers a public (test) address first and a private one
// afterwards, like a rebinding DNS server.
type flipResolver struct {
	first string
	calls int
}

func (f *flipResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	f.calls++
	if f.calls == 1 {
		return []netip.Addr{netip.MustParseAddr(f.first)}, nil
	}
	return []netip.Addr{netip.MustParseAddr("10.0.0.1")}, nil
}

// TestNoRebinding: a connection resolves its name once and connects to
// the address it checked; a second answer never reaches the dial.
func TestNoRebinding(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		close(accepted)
	}()
	ap := netip.MustParseAddrPort(ln.Addr().String())
	r := &flipResolver{first: "127.0.0.1"}
	d := &Dialer{Policy: &Policy{Exceptions: []netip.AddrPort{ap}}, Resolver: r}
	conn, err := d.DialContext(context.Background(), "tcp", fmt.Sprintf("rebind.test:%d", ap.Port()))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if got := conn.RemoteAddr().String(); got != ap.String() {
		t.Errorf("connected to %s, want the checked %s", got, ap)
	}
	conn.Close()
	<-accepted
	if r.calls != 1 {
		t.Fatalf("%d lookups for one connection, want 1", r.calls)
	}
	// The next connection looks up again and is refused.
	if _, err := d.DialContext(context.Background(), "tcp", fmt.Sprintf("rebind.test:%d", ap.Port())); err == nil {
		t.Fatal("second connection to the rebound name allowed")
	}
}

func TestDialNetworkFamilies(t *testing.T) {
	t.Parallel()
	d := &Dialer{Resolver: mapResolver{"v4.test": {"8.8.8.8"}}}
	_, err := d.DialContext(context.Background(), "tcp6", "v4.test:443")
	if err == nil || !strings.Contains(err.Error(), "no tcp6 address") {
		t.Fatalf("tcp6 to a v4-only name: %v", err)
	}
	for _, addr := range []string{"v4.test", "v4.test:http", "v4.test:70000", "[::1]:x"} {
		if _, err := d.DialContext(context.Background(), "tcp", addr); err == nil {
			t.Errorf("DialContext(%q) allowed", addr)
		}
	}
}

// countingResolver counts lookups.
type countingResolver struct {
	mapResolver
	calls int
}

func (c *countingResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	c.calls++
	return c.mapResolver.LookupNetIP(ctx, network, host)
}

// TestPortPolicy: only DefaultPorts (or the policy's Ports) are reached,
// on public and, with AllowPrivate, private addresses; an exception is
// reachable on its port; the address refusal is reported first.
func TestPortPolicy(t *testing.T) {
	t.Parallel()
	var nilPolicy *Policy
	for _, tc := range []struct {
		p       *Policy
		ap      string
		refused string // "", "address" or "port"
	}{
		{nilPolicy, "8.8.8.8:80", ""},
		{nilPolicy, "8.8.8.8:443", ""},
		{nilPolicy, "8.8.8.8:8000", ""},
		{nilPolicy, "8.8.8.8:8999", ""},
		{nilPolicy, "8.8.8.8:7999", "port"},
		{nilPolicy, "8.8.8.8:9000", "port"},
		{nilPolicy, "8.8.8.8:25", "port"},
		{nilPolicy, "8.8.8.8:22", "port"},
		{nilPolicy, "[2606:4700::1]:6379", "port"},
		{&Policy{}, "8.8.8.8:0", "port"},
		{&Policy{}, "10.0.0.1:25", "address"},
		{&Policy{AllowPrivate: true}, "10.0.0.1:80", ""},
		{&Policy{AllowPrivate: true}, "127.0.0.1:6379", "port"},
		{&Policy{Ports: []PortRange{{22, 22}, {3000, 3999}}}, "8.8.8.8:22", ""},
		{&Policy{Ports: []PortRange{{22, 22}, {3000, 3999}}}, "8.8.8.8:3999", ""},
		{&Policy{Ports: []PortRange{{22, 22}, {3000, 3999}}}, "8.8.8.8:443", "port"},
		{&Policy{Exceptions: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:5432")}}, "127.0.0.1:5432", ""},
		{&Policy{Exceptions: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:5432")}}, "8.8.8.8:5432", "port"},
	} {
		err := tc.p.Check(netip.MustParseAddrPort(tc.ap))
		var re *RefusedError
		var pe *PortRefusedError
		got := ""
		switch {
		case errors.As(err, &re):
			got = "address"
		case errors.As(err, &pe):
			got = "port"
		case err != nil:
			t.Errorf("%+v %s: unexpected error %v", tc.p, tc.ap, err)
		}
		if got != tc.refused {
			t.Errorf("%+v %s: refused %q (%v), want %q", tc.p, tc.ap, got, err, tc.refused)
		}
	}
	err := nilPolicy.Check(netip.MustParseAddrPort("8.8.8.8:25"))
	if err == nil || err.Error() != "port 25 is not one of the allowed ports (80, 443 and 8000-8999)" {
		t.Errorf("message %v", err)
	}
	// CheckPort sees no address: an exception's port passes.
	p := &Policy{Exceptions: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:5432")}}
	if p.CheckPort(5432) != nil || p.CheckPort(443) != nil || p.CheckPort(5433) == nil {
		t.Error("CheckPort")
	}
	// The dialer refuses a port before any lookup, and its Control hook
	// refuses one whatever the caller passes.
	r := &countingResolver{mapResolver: mapResolver{"public.test": {"8.8.8.8"}}}
	d := &Dialer{Resolver: r}
	_, err = d.DialContext(context.Background(), "tcp", "public.test:25")
	var pe *PortRefusedError
	if !errors.As(err, &pe) || pe.Port != 25 || r.calls != 0 {
		t.Fatalf("dial to port 25: %v after %d lookups", err, r.calls)
	}
	if err := d.control("tcp4", "8.8.8.8:25", nil); !errors.As(err, &pe) {
		t.Fatalf("control allowed port 25: %v", err)
	}
	if err := d.control("tcp4", "8.8.8.8:443", nil); err != nil {
		t.Fatalf("control refused port 443: %v", err)
	}
}

func TestFormatPorts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		r    []PortRange
		want string
	}{
		{nil, ""},
		{[]PortRange{{443, 443}}, "443"},
		{[]PortRange{{80, 80}, {443, 443}}, "80 and 443"},
		{DefaultPorts, "80, 443 and 8000-8999"},
	} {
		if got := FormatPorts(tc.r); got != tc.want {
			t.Errorf("FormatPorts(%v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}

// TestDefaultPortsMatchTheConfiguration: web.allowed_ports defaults to
// DefaultPorts, so a zero Policy and a default configuration agree.
func TestDefaultPortsMatchTheConfiguration(t *testing.T) {
	t.Parallel()
	got := config.Defaults().Web.Ports()
	if len(got) != len(DefaultPorts) {
		t.Fatalf("config default %v, netguard default %v", got, DefaultPorts)
	}
	for i, r := range got {
		if r.Lo != DefaultPorts[i].Lo || r.Hi != DefaultPorts[i].Hi {
			t.Fatalf("config default %v, netguard default %v", got, DefaultPorts)
		}
	}
}
