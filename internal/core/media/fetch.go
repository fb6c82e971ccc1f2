package media

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/mediagen-dev/mediagen/internal/adapters/netguard"
)

// maxRedirects bounds the redirects one output fetch follows.
const maxRedirects = 5

// client is the HTTP client of the fetches: it follows a redirect only to
// an allowed host, and it connects only to public addresses (and loopback
// when AllowLoopback is set), whatever a name resolves to, so neither a
// redirect nor a DNS answer can point the fetch at link-local addresses
// such as the cloud metadata endpoint, or at private networks.
func (c *Copier) client() *http.Client {
	c.once.Do(func() {
		base := c.HTTP
		if base == nil {
			base = &http.Client{Timeout: 5 * time.Minute}
		}
		cl := *base
		cl.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("%w: more than %d redirects", ErrRejected, maxRedirects)
			}
			if req.URL.Scheme != "https" && req.URL.Scheme != "http" || !c.hostAllowed(req.URL) {
				return rejected("redirected to a host that is not the upstream's", req.URL.Host)
			}
			return nil
		}
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
			Control: func(network, address string, _ syscall.RawConn) error { return c.dialable(address) }}
		// A transport of its own, not a clone of http.DefaultTransport:
		// that one may have been replaced, and it honours proxy settings.
		t := &http.Transport{DialContext: d.DialContext, ForceAttemptHTTP2: true, MaxIdleConns: 100,
			IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second, ExpectContinueTimeout: time.Second}
		if c.RootCAs != nil {
			t.TLSClientConfig = &tls.Config{RootCAs: c.RootCAs, MinVersion: tls.VersionTLS12}
		}
		cl.Transport = t
		c.fetch = &cl
	})
	return c.fetch
}

// dialable refuses a connection to an address that is not public (or
// loopback, when allowed).
func (c *Copier) dialable(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return rejected("its address cannot be read", address)
	}
	if !netguard.Allowed(ap.Addr(), c.AllowLoopback) {
		return rejected("the output's host is not a public address", ap.Addr().String())
	}
	return nil
}
