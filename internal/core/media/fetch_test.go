package media_test

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/local/objectstore"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// The service fetches outputs itself: the fetch never reaches link-local
// or private addresses, nor loopback unless configured for local use,
// whether named directly, through a name that resolves there, or by a
// redirect from an allowed host.
func TestCopyNeverReachesPrivateAddressesUnlessLocal(t *testing.T) {
	ctx := context.Background()
	objects, err := objectstore.Start(ctx, "127.0.0.1:0", "", "outputs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitfor.Close(t, objects.Close) })
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam", http.StatusFound)
			return
		}
		w.Write(pngBytes(t))
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	strict := &media.Copier{Bucket: objects.MediaBucket(), AllowedHosts: []string{"127.0.0.1" + port, "localhost" + port, "169.254.169.254"}, MaxBytes: 1 << 20}
	for _, src := range []string{
		"http://127.0.0.1" + port + "/a.png",
		"http://localhost" + port + "/a.png",
		"http://169.254.169.254/latest/meta-data/iam",
	} {
		if _, err := strict.Copy(ctx, src, "x/a", domain.MediaImage); !errors.Is(err, media.ErrRejected) || !strings.Contains(err.Error(), "not a public address") {
			t.Errorf("Copy(%s) = %v, want refused as not public", src, err)
		}
	}
	if hits != 0 {
		t.Errorf("the strict copier reached the private server %d times", hits)
	}
	local := &media.Copier{Bucket: objects.MediaBucket(), AllowedHosts: []string{"127.0.0.1" + port, "169.254.169.254", "10.0.0.1"}, MaxBytes: 1 << 20, AllowLoopback: true}
	for _, src := range []string{"http://169.254.169.254/latest/meta-data/iam", "http://10.0.0.1/a.png"} {
		if _, err := local.Copy(ctx, src, "x/c", domain.MediaImage); !errors.Is(err, media.ErrRejected) || !strings.Contains(err.Error(), "not a public address") {
			t.Errorf("the local copier: Copy(%s) = %v, want refused as not public", src, err)
		}
	}
	if _, err := local.Copy(ctx, srv.URL+"/a.png", "x/a", domain.MediaImage); err != nil {
		t.Errorf("the local copier refused its loopback upstream: %v", err)
	}
	local.AllowedHosts = []string{"127.0.0.1" + port}
	if _, err := local.Copy(ctx, srv.URL+"/redirect", "x/b", domain.MediaImage); !errors.Is(err, media.ErrRejected) || !strings.Contains(err.Error(), "redirected to a host that is not the upstream's (169.254.169.254)") {
		t.Errorf("a redirect to another host = %v, want refused", err)
	}
}

// A copier given RootCAs fetches from an https origin whose CA only they
// hold (the local runtime's simulator); without them the same fetch is
// refused for its certificate, as a Lambda function's would be.
func TestCopyTrustsTheGivenRootCAsOnly(t *testing.T) {
	ctx := context.Background()
	objects, err := objectstore.Start(ctx, "127.0.0.1:0", "", "outputs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitfor.Close(t, objects.Close) })
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(pngBytes(t)) }))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "https://")
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tests := []struct {
		name    string
		roots   *x509.CertPool
		wantErr bool
	}{
		{"the system's CAs", nil, true},
		{"the origin's CA", pool, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &media.Copier{Bucket: objects.MediaBucket(), AllowedHosts: []string{host}, MaxBytes: 1 << 20, AllowLoopback: true, RootCAs: tt.roots}
			_, err := c.Copy(ctx, srv.URL+"/a.png", "x/tls", domain.MediaImage)
			var unknown x509.UnknownAuthorityError
			if tt.wantErr && !errors.As(err, &unknown) {
				t.Errorf("Copy = %v, want refused: the certificate's authority is unknown", err)
			}
			if !tt.wantErr && err != nil {
				t.Errorf("Copy = %v, want the output copied", err)
			}
		})
	}
}
