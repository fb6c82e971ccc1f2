package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
)

// The classes of a failed attempt, as the record's webhook.attempts show
// them. A class names what went wrong and never the address, port or the
// system's error text, nor how a port failed: refused, reset, silent or
// speaking something else all read could_not_connect, so that a key
// holder cannot map the network the service runs in (which ports answer,
// and how) from the attempts.
const (
	ErrorHTTPStatus       = "http_status"        // the receiver answered, not with 2xx (status_code says which)
	ErrorCouldNotConnect  = "could_not_connect"  // no HTTP answer came: not connected, cut off, or no answer in time
	ErrorAddressNotPublic = "address_not_public" // the URL's host resolves to a private address, or a loopback port not allowed
	ErrorDNS              = "dns_error"          // the host name does not resolve
	ErrorTLS              = "tls_error"          // the receiver's certificate was refused
)

// ErrorClasses lists every class, in the order the API documents them.
var ErrorClasses = []string{ErrorHTTPStatus, ErrorCouldNotConnect, ErrorAddressNotPublic, ErrorDNS, ErrorTLS}

// CurrentClass is the class a stored attempt's error reads as today:
// records from before could_not_connect name how a port failed
// (connection_refused, connection_reset, timeout, request_failed), which
// the views no longer tell.
func CurrentClass(stored string) string {
	switch stored {
	case "connection_refused", "connection_reset", "timeout", "request_failed":
		return ErrorCouldNotConnect
	}
	return stored
}

// errStatus is a receiver's answer other than 2xx.
var errStatus = errors.New("receiver answered without 2xx")

// Classify names the class of a failed attempt's error.
func Classify(err error) string {
	var (
		dnsErr     *net.DNSError
		certErr    *tls.CertificateVerificationError
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
	)
	switch {
	case errors.Is(err, errStatus):
		return ErrorHTTPStatus
	case errors.Is(err, ErrPrivateAddress):
		return ErrorAddressNotPublic
	case errors.As(err, &dnsErr) && !dnsErr.IsTimeout:
		return ErrorDNS
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalidErr):
		// Only a TLS server sends a certificate; a port that is not one
		// (a bad record header, an alert) reads as could_not_connect.
		return ErrorTLS
	}
	return ErrorCouldNotConnect
}
