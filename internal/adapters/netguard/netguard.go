// Package netguard decides which addresses the service may connect to when a
// caller or a provider chose the URL: output copies, webhook deliveries and
// image URLs in requests. One rule for all of them: public unicast
// addresses only, with every IPv6 form that carries an IPv4 address judged
// by that IPv4 address, since a NAT64 gateway or a 6to4 relay delivers the
// connection to it.
package netguard

import (
	"net/netip"
	"slices"
)

// nonPublic are the ranges netip has no predicate for (IANA's special
// purpose registries): not routable on the internet, or routed to this
// machine, a private network or a device in between.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT (some clouds serve metadata here)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation (TEST-NET-1)
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking, used inside data centres
	netip.MustParsePrefix("198.51.100.0/24"), // documentation (TEST-NET-2)
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast (deprecated)
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation (TEST-NET-3)
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and 255.255.255.255
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64 (RFC 8215): a private network's gateway
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments, Teredo (2001::/32) among them
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("fc00::/7"),        // unique local
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
}

// Prefixes whose addresses carry an IPv4 address.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96") // well-known NAT64 prefix (RFC 6052): the last 32 bits
	sixToFour = netip.MustParsePrefix("2002::/16")    // 6to4 (RFC 3056): bits 16 to 48
	v4compat  = netip.MustParsePrefix("::/96")        // IPv4-compatible (deprecated): the last 32 bits
)

// Embedded is the IPv4 address an IPv6 address carries, by the form it has:
// IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64
// (64:ff9b::a.b.c.d) or 6to4 (2002:aabb:ccdd::). ok is false for any
// other address, and for an IPv4 address.
func embedded(addr netip.Addr) (v4 netip.Addr, ok bool) {
	if !addr.Is6() {
		return netip.Addr{}, false
	}
	b := addr.WithZone("").As16()
	switch {
	case addr.Is4In6():
		return addr.Unmap(), true
	case nat64.Contains(addr.WithZone("")):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(addr.WithZone("")):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	case v4compat.Contains(addr.WithZone("")) && !addr.IsLoopback() && !addr.IsUnspecified():
		return netip.AddrFrom4([4]byte(b[12:16])), true
	}
	return netip.Addr{}, false
}

// Public reports whether addr is a public unicast address: not loopback,
// link-local (169.254.169.254 is the cloud metadata endpoint), private,
// carrier-grade NAT, benchmarking, documentation, multicast, unspecified or
// otherwise reserved; an address with a zone is never public. An IPv6 address
// that carries an IPv4 address is public only when that address is.
func Public(addr netip.Addr) bool {
	if !addr.IsValid() || addr.Zone() != "" {
		return false
	}
	if v4, ok := embedded(addr); ok {
		addr = v4
	}
	if !addr.IsGlobalUnicast() || addr.IsPrivate() || addr.IsLoopback() || addr.IsLinkLocalUnicast() {
		return false
	}
	return !slices.ContainsFunc(nonPublic, func(p netip.Prefix) bool { return p.Contains(addr) })
}

// Loopback reports whether addr is this machine: a loopback address, also
// in its IPv4-mapped form. (A NAT64 or 6to4 form of 127.0.0.1 is not: it is
// routed away from this machine, and Public refuses it.)
func Loopback(addr netip.Addr) bool {
	return addr.Zone() == "" && addr.Unmap().IsLoopback()
}

// Allowed is the check every guarded dial makes: a public address, or
// loopback when the service runs locally (allowLoopback).
func Allowed(addr netip.Addr, allowLoopback bool) bool {
	return Public(addr) || allowLoopback && Loopback(addr)
}
