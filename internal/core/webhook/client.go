package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"syscall"
	"time"

	"github.com/mediagen-dev/mediagen/internal/adapters/netguard"
)

// ErrPrivateAddress is a connection refused because it would reach this
// machine or a private network.
var errPrivateAddress = errors.New("address is not public")

// SafeClient is an HTTP client for URLs that callers chose: it checks the
// address it actually connects to (after DNS, so a public name resolving
// to a private address is refused too), follows no redirects and has a
// timeout. loopbackPorts are the ports of this machine it may reach too,
// for local use (serve --webhook-allow); none in AWS.
func SafeClient(loopbackPorts ...uint16) *http.Client {
	dialer := &net.Dialer{
		Timeout: 5 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s", errPrivateAddress, address)
			}
			allowed := netguard.Public(ap.Addr()) || netguard.Loopback(ap.Addr()) && slices.Contains(loopbackPorts, ap.Port())
			if !allowed {
				return fmt.Errorf("%w: %s", errPrivateAddress, ap.Addr())
			}
			return nil
		},
	}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           func(ctx context.Context, n, a string) (net.Conn, error) { return dialer.DialContext(ctx, n, a) },
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: Timeout,
		MaxIdleConnsPerHost:   4,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
