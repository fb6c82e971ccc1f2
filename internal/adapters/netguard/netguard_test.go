package netguard_test

import (
	"net/netip"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/adapters/netguard"
)

// TestOnlyPublicAddressesArePublic: every form of a loopback, private,
// link-local or reserved address is refused, IPv6 forms that carry an IPv4
// address (mapped, compatible, NAT64, 6to4) by the address they carry.
func TestOnlyPublicAddressesArePublic(t *testing.T) {
	tests := []struct {
		addr   string
		public bool
		why    string
	}{
		{"8.8.8.8", true, "public IPv4"},
		{"52.95.110.1", true, "public IPv4"},
		{"2606:4700:4700::1111", true, "public IPv6"},
		{"::ffff:8.8.8.8", true, "IPv4-mapped public"},
		{"64:ff9b::808:808", true, "NAT64 of a public address"},
		{"2002:808:808::1", true, "6to4 of a public address"},
		{"::8.8.8.8", true, "IPv4-compatible public"},

		{"127.0.0.1", false, "loopback"},
		{"127.8.9.10", false, "loopback"},
		{"::1", false, "IPv6 loopback"},
		{"169.254.169.254", false, "link-local: the metadata endpoint"},
		{"fe80::1", false, "IPv6 link-local"},
		{"10.0.0.1", false, "private"},
		{"172.16.5.4", false, "private"},
		{"192.168.1.1", false, "private"},
		{"100.64.0.1", false, "carrier-grade NAT"},
		{"198.18.0.1", false, "benchmarking 198.18.0.0/15"},
		{"198.19.255.254", false, "benchmarking 198.18.0.0/15"},
		{"192.0.2.1", false, "documentation"},
		{"203.0.113.9", false, "documentation"},
		{"240.0.0.1", false, "reserved"},
		{"255.255.255.255", false, "broadcast"},
		{"0.0.0.0", false, "unspecified"},
		{"0.1.2.3", false, "this network"},
		{"::", false, "IPv6 unspecified"},
		{"224.0.0.1", false, "multicast"},
		{"ff02::1", false, "IPv6 multicast"},
		{"fc00::1", false, "unique local"},
		{"fd12:3456::1", false, "unique local"},
		{"2001:db8::1", false, "documentation"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", false, "Teredo"},
		{"fe80::1%eth0", false, "a zone"},

		{"::ffff:127.0.0.1", false, "IPv4-mapped loopback"},
		{"::ffff:169.254.169.254", false, "IPv4-mapped metadata endpoint"},
		{"::ffff:10.0.0.1", false, "IPv4-mapped private"},
		{"::127.0.0.1", false, "IPv4-compatible loopback"},
		{"::169.254.169.254", false, "IPv4-compatible metadata endpoint"},
		{"::10.1.2.3", false, "IPv4-compatible private"},
		{"64:ff9b::7f00:1", false, "NAT64 of loopback"},
		{"64:ff9b::a9fe:a9fe", false, "NAT64 of the metadata endpoint"},
		{"64:ff9b::c612:1", false, "NAT64 of 198.18.0.1"},
		{"64:ff9b:1::808:808", false, "local-use NAT64"},
		{"2002:7f00:1::", false, "6to4 of loopback"},
		{"2002:a9fe:a9fe::1", false, "6to4 of the metadata endpoint"},
		{"2002:c0a8:101::", false, "6to4 of a private address"},
	}
	for _, tt := range tests {
		if got := netguard.Public(netip.MustParseAddr(tt.addr)); got != tt.public {
			t.Errorf("Public(%s) = %v, want %v (%s)", tt.addr, got, tt.public, tt.why)
		}
	}
}

func TestLoopbackIsAllowedOnlyWhereAsked(t *testing.T) {
	tests := []struct {
		addr          string
		local, strict bool
	}{
		{"127.0.0.1", true, false},
		{"::1", true, false},
		{"::ffff:127.0.0.1", true, false},
		// Routed away from this machine: neither loopback nor public.
		{"64:ff9b::7f00:1", false, false},
		{"2002:7f00:1::", false, false},
		{"10.0.0.1", false, false},
		{"169.254.169.254", false, false},
		{"8.8.8.8", true, true},
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		if got := netguard.Allowed(a, true); got != tt.local {
			t.Errorf("Allowed(%s, loopback allowed) = %v, want %v", tt.addr, got, tt.local)
		}
		if got := netguard.Allowed(a, false); got != tt.strict {
			t.Errorf("Allowed(%s, strict) = %v, want %v", tt.addr, got, tt.strict)
		}
	}
}
