package media_test

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// A music_url is fetched through the egress guard: https only, public
// addresses only (loopback only for local use), redirects checked again,
// and at most MaxBytes kept.
func TestDownloaderFetchesOnlyWhatTheGuardAllows(t *testing.T) {
	body := strings.Repeat("a", 1000)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metadata":
			http.Redirect(w, r, "https://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/plain":
			http.Redirect(w, r, "http://example.com/song.mp3", http.StatusFound)
		case "/missing":
			http.NotFound(w, r)
		default:
			w.Write([]byte(body))
		}
	}))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	local := &media.Downloader{MaxBytes: 2000, AllowLoopback: true, RootCAs: pool}
	strict := &media.Downloader{MaxBytes: 2000, RootCAs: pool}
	small := &media.Downloader{MaxBytes: 999, AllowLoopback: true, RootCAs: pool}
	for _, tc := range []struct {
		name     string
		d        *media.Downloader
		url      string
		rejected bool // by the guard or the cap, not a fetch failure
		ok       bool
	}{
		{"loopback, local use", local, srv.URL + "/song.mp3", false, true},
		{"loopback, deployed", strict, srv.URL + "/song.mp3", true, false},
		{"redirect to the metadata endpoint", local, srv.URL + "/metadata", true, false},
		{"redirect to plain http", local, srv.URL + "/plain", true, false},
		{"plain http", local, "http://example.com/song.mp3", true, false},
		{"over the cap", small, srv.URL + "/song.mp3", true, false},
		{"not found", local, srv.URL + "/missing", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "song")
			err := tc.d.Download(context.Background(), tc.url, path)
			if (err == nil) != tc.ok || errors.Is(err, media.ErrRejected) != tc.rejected {
				t.Fatalf("Download(%s) = %v; want ok %v, rejected %v", tc.url, err, tc.ok, tc.rejected)
			}
			if tc.ok {
				if got, _ := os.ReadFile(path); string(got) != body {
					t.Errorf("downloaded %d bytes, want the %d served", len(got), len(body))
				}
			}
		})
	}
}
