package media

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
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
		cl.Transport = guardedTransport(c.AllowLoopback, c.RootCAs)
		c.fetch = &cl
	})
	return c.fetch
}

// guardedTransport connects only to public addresses (and loopback when
// allowLoopback), whatever a name resolves to, trusting rootCAs (nil: the
// system's). A transport of its own, not a clone of
// http.DefaultTransport: that one may have been replaced, and it honours
// proxy settings.
func guardedTransport(allowLoopback bool, rootCAs *x509.CertPool) *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error { return dialable(address, allowLoopback) }}
	t := &http.Transport{DialContext: d.DialContext, ForceAttemptHTTP2: true, MaxIdleConns: 100,
		IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second, ExpectContinueTimeout: time.Second}
	if rootCAs != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: rootCAs, MinVersion: tls.VersionTLS12}
	}
	return t
}

// dialable refuses a connection to an address that is not public (or
// loopback, when allowed).
func dialable(address string, allowLoopback bool) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return rejected("its address cannot be read", address)
	}
	if !netguard.Allowed(ap.Addr(), allowLoopback) {
		return rejected("the host is not a public address", ap.Addr().String())
	}
	return nil
}

// Downloader fetches a file a caller named by its URL (a long video's
// music_url) into a local file, through the same egress guard as the
// output copies: public addresses only (loopback too when AllowLoopback,
// for local use), https only (http to loopback when AllowLoopback), at
// most maxRedirects redirects, at most MaxBytes.
type Downloader struct {
	HTTP          *http.Client
	MaxBytes      int64
	AllowLoopback bool
	// RootCAs are the CAs the fetches' TLS trusts; nil is the system's.
	RootCAs *x509.CertPool

	once   sync.Once
	client *http.Client
}

func (d *Downloader) httpClient() *http.Client {
	d.once.Do(func() {
		base := d.HTTP
		if base == nil {
			base = &http.Client{Timeout: time.Minute}
		}
		cl := *base
		cl.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("%w: more than %d redirects", ErrRejected, maxRedirects)
			}
			return d.schemeAllowed(req.URL)
		}
		cl.Transport = guardedTransport(d.AllowLoopback, d.RootCAs)
		d.client = &cl
	})
	return d.client
}

// schemeAllowed admits https, and http to a loopback host when
// AllowLoopback.
func (d *Downloader) schemeAllowed(u *url.URL) error {
	if u.Scheme == "https" {
		return nil
	}
	if a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); u.Scheme == "http" && d.AllowLoopback &&
		(strings.EqualFold(u.Hostname(), "localhost") || err == nil && netguard.Loopback(a)) {
		return nil
	}
	return rejected("only https URLs are fetched", u.Scheme)
}

// Download writes what rawURL answers to path. A refusal of the guard,
// a body over MaxBytes or an answer other than 200 is an error whose
// message is fit for the caller.
func (d *Downloader) Download(ctx context.Context, rawURL, path string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rejected("the URL cannot be read", "")
	}
	if err := d.schemeAllowed(u); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return rejected("the URL cannot be read", "")
	}
	resp, err := d.httpClient().Do(req)
	if err != nil {
		if re := (*rejectedError)(nil); errors.As(err, &re) {
			return re
		}
		return fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch %s: HTTP %d", u.Redacted(), resp.StatusCode)
	}
	if d.MaxBytes > 0 && resp.ContentLength > d.MaxBytes {
		return rejected(fmt.Sprintf("%d bytes is over the %d byte cap", resp.ContentLength, d.MaxBytes), "")
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	defer f.Close()
	limit := d.MaxBytes
	if limit <= 0 {
		limit = 1 << 62
	}
	n, err := io.Copy(f, io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	if n > limit {
		return rejected(fmt.Sprintf("over the %d byte cap", d.MaxBytes), "")
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	return nil
}
