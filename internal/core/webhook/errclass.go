package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

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
		return domain.WebhookErrorHTTPStatus
	case errors.Is(err, errPrivateAddress):
		return domain.WebhookErrorAddressNotPublic
	case errors.As(err, &dnsErr) && !dnsErr.IsTimeout:
		return domain.WebhookErrorDNS
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalidErr):
		// Only a TLS server sends a certificate; a port that is not one
		// (a bad record header, an alert) reads as could_not_connect.
		return domain.WebhookErrorTLS
	}
	return domain.WebhookErrorCouldNotConnect
}
