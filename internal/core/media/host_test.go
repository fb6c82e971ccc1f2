package media

import (
	"net/url"
	"testing"
)

// An output host entry "*.domain" admits every subdomain of the domain (as
// providers serve files from many), never the bare domain or a look-alike,
// and only on the entry's port.
func TestWildcardOutputHosts(t *testing.T) {
	tests := []struct {
		entry, src string
		ok         bool
	}{
		{"*.replicate.delivery", "https://pbxt.replicate.delivery/x/out.png", true},
		{"*.replicate.delivery", "https://a.b.replicate.delivery/out.png", true},
		{"*.replicate.delivery", "https://PBXT.Replicate.Delivery/out.png", true},
		{"*.replicate.delivery", "https://replicate.delivery/out.png", false},
		{"*.replicate.delivery", "https://evilreplicate.delivery/out.png", false},
		{"*.replicate.delivery", "https://replicate.delivery.evil.example/out.png", false},
		{"*.replicate.delivery", "https://pbxt.replicate.delivery:8443/out.png", false},
		{"*.fal.media:8443", "https://v3.fal.media:8443/out.mp4", true},
		{"*.fal.media:8443", "https://v3.fal.media/out.mp4", false},
		{"files.example", "https://cdn.files.example/out.png", false},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		c := &Copier{AllowedHosts: []string{tt.entry}}
		if got := c.hostAllowed(u); got != tt.ok {
			t.Errorf("entry %q admits %s = %v, want %v", tt.entry, tt.src, got, tt.ok)
		}
	}
}
