package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Policy decides which addresses and ports may be reached. The zero value
// (and a nil *Policy) refuses every address that is not public and every
// port but DefaultPorts.
type Policy struct {
	// AllowPrivate lifts the address policy: every address may be
	// reached. It does not lift the port policy.
	AllowPrivate bool
	// Ports are the TCP ports that may be reached; empty means
	// DefaultPorts.
	Ports []PortRange
	// Exceptions are exact address:port pairs reachable even though their
	// address or port is refused. Tests use them to make an httptest
	// server on loopback the "public" side while loopback on every other
	// port stays refused. CheckPort, which sees no address, accepts the
	// port of any exception.
	Exceptions []netip.AddrPort
}

// PortRange is an inclusive range of TCP ports; Lo == Hi for one port.
type PortRange struct{ Lo, Hi uint16 }

// DefaultPorts are the ports a Policy without Ports allows: HTTP, HTTPS,
// and 8000-8999, where development and alternative HTTP servers listen
// (8000, 8080, 8443, 8888). Other ports belong mostly to services that do
// not speak HTTP (mail, databases, caches), which a fetch has no business
// sending a request to.
var DefaultPorts = []PortRange{{80, 80}, {443, 443}, {8000, 8999}}

// FormatPorts writes ranges as a person reads them: "80, 443 and
// 8000-8999".
func FormatPorts(ranges []PortRange) string {
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = strconv.Itoa(int(r.Lo))
		if r.Hi != r.Lo {
			parts[i] += "-" + strconv.Itoa(int(r.Hi))
		}
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// PortRefusedError is a port the policy refuses.
type PortRefusedError struct {
	Port    uint16
	Allowed []PortRange
}

func (e *PortRefusedError) Error() string {
	return fmt.Sprintf("port %d is not one of the allowed ports (%s)", e.Port, FormatPorts(e.Allowed))
}

// ports returns the allowed ranges.
func (p *Policy) ports() []PortRange {
	if p == nil || len(p.Ports) == 0 {
		return DefaultPorts
	}
	return p.Ports
}

// CheckPort returns a *PortRefusedError when port may not be reached on
// any address. The port of an exception passes.
func (p *Policy) CheckPort(port uint16) error {
	if p.portAllowed(port) {
		return nil
	}
	if p != nil && slices.ContainsFunc(p.Exceptions, func(ap netip.AddrPort) bool { return ap.Port() == port }) {
		return nil
	}
	return &PortRefusedError{Port: port, Allowed: p.ports()}
}

func (p *Policy) portAllowed(port uint16) bool {
	for _, r := range p.ports() {
		if r.Lo <= port && port <= r.Hi {
			return true
		}
	}
	return false
}

// RefusedError is an address or name the policy refuses.
type RefusedError struct {
	// Host is the name that resolved to Addr, or "" for an IP literal.
	Host string
	// Addr is the refused address; invalid for a refused name.
	Addr netip.Addr
	// Reason says what kind of address (or name) it is.
	Reason string
}

func (e *RefusedError) Error() string {
	switch {
	case !e.Addr.IsValid():
		return fmt.Sprintf("host %s is %s, which is not a public address", e.Host, e.Reason)
	case e.Host != "":
		return fmt.Sprintf("host %s resolves to %s, which is %s, not a public address", e.Host, e.Addr, e.Reason)
	}
	return fmt.Sprintf("address %s is %s, not a public address", e.Addr, e.Reason)
}

// Check returns a *RefusedError when ap's address may not be reached, or
// else a *PortRefusedError when its port may not.
func (p *Policy) Check(ap netip.AddrPort) error {
	a := ap.Addr().WithZone("")
	if p != nil && slices.Contains(p.Exceptions, netip.AddrPortFrom(a.Unmap(), ap.Port())) {
		return nil
	}
	if p == nil || !p.AllowPrivate {
		if r := Refusal(a); r != "" {
			return &RefusedError{Addr: ap.Addr(), Reason: r}
		}
	}
	if !p.portAllowed(ap.Port()) {
		return &PortRefusedError{Port: ap.Port(), Allowed: p.ports()}
	}
	return nil
}

// CheckName refuses names that denote the local machine or cloud metadata
// before any lookup: a system resolver answers them from /etc/hosts or
// local configuration. name is canonical (see ParseHost).
func (p *Policy) CheckName(name string) error {
	if p != nil && p.AllowPrivate {
		return nil
	}
	switch {
	case name == "localhost" || strings.HasSuffix(name, ".localhost"):
		return &RefusedError{Host: name, Reason: "a loopback name (localhost)"}
	case name == "metadata.google.internal" || name == "metadata":
		return &RefusedError{Host: name, Reason: "a cloud metadata name"}
	}
	return nil
}

// Resolver looks up the addresses of a host name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer connects only to addresses and ports the policy allows. A host name is
// resolved once per connection; if any of its addresses is refused, the
// name is refused, and the connection is made only to the addresses that
// were checked, so the name cannot be rebound in between. The Control
// hook checks the address actually being connected to once more.
type Dialer struct {
	// Policy is the address policy; nil refuses every non-public address.
	Policy *Policy
	// Resolver resolves names; nil uses the pure-Go resolver.
	Resolver Resolver
	// Timeout bounds each connection attempt; 0 means 10 seconds. The
	// caller's context bounds the whole dial.
	Timeout time.Duration
}

var goResolver = &net.Resolver{PreferGo: true}

// Resolve returns the checked addresses of host for a connection to port.
// host is a URL host (see ParseHost); an IP literal is checked without a
// lookup.
func (d *Dialer) Resolve(ctx context.Context, host string, port uint16) ([]netip.Addr, error) {
	h, err := ParseHost(host)
	if err != nil {
		return nil, err
	}
	// A refused port needs no lookup.
	if err := d.Policy.CheckPort(port); err != nil {
		return nil, err
	}
	if h.Addr.IsValid() {
		if err := d.Policy.Check(netip.AddrPortFrom(h.Addr, port)); err != nil {
			return nil, err
		}
		return []netip.Addr{h.Addr.Unmap()}, nil
	}
	if err := d.Policy.CheckName(h.Name); err != nil {
		return nil, err
	}
	r := d.Resolver
	if r == nil {
		r = goResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", h.Name)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve host %s: %w", h.Name, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("host %s has no addresses", h.Name)
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if err := d.Policy.Check(netip.AddrPortFrom(a, port)); err != nil {
			var re *RefusedError
			if errors.As(err, &re) {
				re.Host = h.Name
			}
			return nil, err
		}
		if a = a.Unmap(); !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// DialContext has the signature of http.Transport.DialContext. It dials
// only "tcp", "tcp4" and "tcp6".
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("netguard: network %q is not allowed", network)
	}
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("netguard: address %q: %w", address, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("netguard: port %q is not a number from 0 to 65535", portStr)
	}
	addrs, err := d.Resolve(ctx, host, uint16(port))
	if err != nil {
		return nil, err
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	nd := net.Dialer{Timeout: timeout, Control: d.control}
	var errs []error
	for _, a := range addrs {
		if network == "tcp4" && !a.Is4() || network == "tcp6" && a.Is4() {
			continue
		}
		conn, err := nd.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("netguard: host %s has no %s address", host, network)
	}
	return nil, errors.Join(errs...)
}

// control re-checks the address the socket is about to connect to. It
// runs before connect(2), so a refused address is never sent a packet.
func (d *Dialer) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("netguard: cannot check dial address %q: %w", address, err)
	}
	return d.Policy.Check(ap)
}
