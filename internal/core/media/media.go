// Package media keeps the service's own copies of generated files. Upstream
// URLs are temporary, so every output is copied into the service's bucket and
// the API returns the service's URLs.
package media

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// ErrRejected is an output the service will not keep: wrong type, too large,
// from a host it does not trust.
var ErrRejected = errors.New("output rejected")

// Bucket stores objects and names their public URLs.
type Bucket interface {
	Put(ctx context.Context, key string, body io.Reader, contentType string) error
	URL(key string) string
}

// Copier fetches upstream outputs and stores them in the bucket.
type Copier struct {
	Bucket Bucket
	HTTP   *http.Client
	// AllowedHosts are the hosts outputs may come from (the upstream's):
	// "host" admits the scheme's default port only (443 for https, 80 for
	// http), "host:port" that port only.
	AllowedHosts []string
	// MaxBytes caps one output.
	MaxBytes int64
	// AllowLoopback lets fetches reach loopback addresses (never link-local
	// or private ones): for local use only, where the upstream is on this
	// machine.
	AllowLoopback bool
	// RootCAs are the CAs the fetches' TLS trusts; nil is the system's.
	// Only the local runtime sets it (to add its simulator's CA): the
	// Lambda functions never do.
	RootCAs *x509.CertPool

	once  sync.Once
	fetch *http.Client
}

// extensions maps the content types the service keeps to file extensions.
var extensions = map[string]string{
	"video/mp4":  ".mp4",
	"image/png":  ".png",
	"image/jpeg": ".jpg",
	"image/webp": ".webp",
}

// Copy streams src into the bucket under keyBase plus the extension of its
// type, checking host, size and that the content is of the expected kind.
// The key is deterministic, so a repeated copy overwrites the same object.
func (c *Copier) Copy(ctx context.Context, src, keyBase string, kind domain.MediaKind) (string, error) {
	u, err := url.Parse(src)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", rejected("output is not an http(s) URL", fmt.Sprintf("%.200q", src))
	}
	if !c.hostAllowed(u) {
		return "", rejected("output host is not the upstream's", u.Host)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return "", fmt.Errorf("fetch output: %w", err)
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return "", fmt.Errorf("fetch output %s: %w", path.Base(u.Path), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", &statusError{File: path.Base(u.Path), Status: resp.StatusCode}
	}
	if resp.ContentLength > c.MaxBytes {
		return "", rejected(fmt.Sprintf("output of %d bytes is over the %d byte cap", resp.ContentLength, c.MaxBytes), "")
	}
	// Sniff the first bytes rather than trusting the declared type.
	head := make([]byte, 512)
	n, err := io.ReadFull(resp.Body, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("fetch output: %w", err)
	}
	head = head[:n]
	ctype := sniff(head)
	ext, ok := extensions[ctype]
	if !ok || kindOf(ctype) != kind {
		return "", rejected(fmt.Sprintf("output is %s, want %s", describe(ctype), kindWord(kind)), "")
	}
	key := keyBase + ext
	body := &capped{r: io.MultiReader(strings.NewReader(string(head)), resp.Body), left: c.MaxBytes}
	if err := c.Bucket.Put(ctx, key, body, ctype); err != nil {
		if body.over {
			return "", rejected(fmt.Sprintf("output is over the %d byte cap", c.MaxBytes), "")
		}
		return "", fmt.Errorf("store output %s: %w", key, err)
	}
	return c.Bucket.URL(key), nil
}

// hostAllowed reports whether u's host and port are those of an entry of
// AllowedHosts.
func (c *Copier) hostAllowed(u *url.URL) bool {
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = defaultPort(u.Scheme)
	}
	for _, entry := range c.AllowedHosts {
		h, p := splitHostEntry(entry, u.Scheme)
		if p == port && hostMatches(h, host) {
			return true
		}
	}
	return false
}

// splitHostEntry reads an AllowedHosts entry: a host with an optional port,
// the scheme's default port when it has none.
func splitHostEntry(entry, scheme string) (host, port string) {
	if h, p, err := net.SplitHostPort(entry); err == nil {
		return h, p
	}
	return strings.Trim(entry, "[]"), defaultPort(scheme)
}

// hostMatches compares an entry's host with a URL's, case-insensitively; a
// pattern "*.example.net" matches every subdomain of example.net (not the
// bare domain).
func hostMatches(pattern, host string) bool {
	if strings.EqualFold(pattern, host) {
		return true
	}
	suffix, ok := strings.CutPrefix(pattern, "*.")
	return ok && len(host) > len(suffix)+1 && strings.EqualFold(host[len(host)-len(suffix)-1:], "."+suffix)
}

func defaultPort(scheme string) string {
	if strings.EqualFold(scheme, "http") {
		return "80"
	}
	return "443"
}

// sniff recognises the types the service keeps; http.DetectContentType knows
// mp4 ("ftyp" boxes), png, jpeg and webp.
func sniff(head []byte) string {
	t := http.DetectContentType(head)
	if i := strings.IndexByte(t, ';'); i >= 0 {
		t = t[:i]
	}
	return t
}

func kindOf(ctype string) domain.MediaKind {
	if strings.HasPrefix(ctype, "video/") {
		return domain.MediaVideo
	}
	return domain.MediaImage
}

func kindWord(k domain.MediaKind) string {
	if k == domain.MediaVideo {
		return "an mp4 video"
	}
	return "a png, jpeg or webp image"
}

func describe(ctype string) string {
	if ctype == "" || ctype == "application/octet-stream" {
		return "of an unknown type"
	}
	return ctype
}

// capped fails a read past its limit, so an oversized upload is aborted.
type capped struct {
	r    io.Reader
	left int64
	over bool
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left < 0 {
		c.over = true
		return 0, fmt.Errorf("%w: over the size cap", ErrRejected)
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		c.over = true
		return 0, fmt.Errorf("%w: over the size cap", ErrRejected)
	}
	return n, err
}
