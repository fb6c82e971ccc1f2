package simulator

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA file names under the directory given to LoadOrCreateCA.
const (
	caFileName    = "ca.pem"
	caKeyFileName = "ca-key.pem"
)

// CA is the certificate authority of the simulator's files origin: the
// outputs are served over https (the replicate client makes a FileOutput
// only of https: URLs) with a certificate it signs, and a client trusts it
// with NODE_EXTRA_CA_CERTS or SSL_CERT_FILE pointing at File.
type CA struct {
	Cert *x509.Certificate
	key  crypto.Signer
	// PEM is the CA certificate, PEM-encoded.
	PEM []byte
	// File is where PEM is written ("" when kept in memory only).
	File string
}

// LoadOrCreateCA reads the CA kept in dir (ca.pem and its key), or makes
// one and writes it there, so that a client trusting it keeps trusting the
// simulator across restarts. An empty dir makes one in memory only.
func LoadOrCreateCA(dir string) (*CA, error) {
	if dir != "" {
		ca, err := loadCA(dir)
		if err == nil {
			return ca, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("simulator CA: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, fmt.Errorf("simulator CA: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "mediagen simulator local CA", Organization: []string{"mediagen (local only)"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("simulator CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("simulator CA: %w", err)
	}
	ca := &CA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	if dir == "" {
		return ca, nil
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("simulator CA: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("simulator CA: %w", err)
	}
	// The key first: a ca.pem present means its key is too.
	if err := os.WriteFile(filepath.Join(dir, caKeyFileName), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, fmt.Errorf("simulator CA: %w", err)
	}
	ca.File = filepath.Join(dir, caFileName)
	if err := os.WriteFile(ca.File, ca.PEM, 0o644); err != nil {
		return nil, fmt.Errorf("simulator CA: %w", err)
	}
	return ca, nil
}

func loadCA(dir string) (*CA, error) {
	file := filepath.Join(dir, caFileName)
	certPEM, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("simulator CA: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, caKeyFileName))
	if err != nil {
		return nil, fmt.Errorf("simulator CA: %s without its key: %w", file, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("simulator CA %s: %w", file, err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("simulator CA %s: %w", file, err)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok || !cert.IsCA {
		return nil, fmt.Errorf("simulator CA %s: not a CA certificate with its key", file)
	}
	if time.Now().After(cert.NotAfter) {
		return nil, fmt.Errorf("simulator CA %s expired on %s: remove it and its key to make a new one", file, cert.NotAfter.Format(time.DateOnly))
	}
	return &CA{Cert: cert, key: signer, PEM: certPEM, File: file}, nil
}

// Pool is a pool holding only the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// ServerTLS is a server configuration with a certificate the CA signs for
// hosts (IP addresses or names).
func (ca *CA) ServerTLS(hosts ...string) (*tls.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("simulator files certificate: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, fmt.Errorf("simulator files certificate: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "mediagen simulator files"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return nil, fmt.Errorf("simulator files certificate: %w", err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12,
		Certificates: []tls.Certificate{{Certificate: [][]byte{der, ca.Cert.Raw}, PrivateKey: key}}}, nil
}
