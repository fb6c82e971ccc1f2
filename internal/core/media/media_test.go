package media_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/aws/s3bucket"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/local/objectstore"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// fakeMP4 starts with an ftyp box, which is how mp4 files are recognised.
var fakeMP4 = append([]byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"), bytes.Repeat([]byte{0}, 2000)...)

func pngBytes(t *testing.T) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func setup(t *testing.T, files map[string][]byte) (*media.Copier, *s3bucket.Bucket, *httptest.Server) {
	t.Helper()
	ctx := context.Background()
	s3srv, err := objectstore.Start(ctx, "127.0.0.1:0", "", "outputs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitfor.Close(t, s3srv.Close) })
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream") // the declared type is not trusted
		w.Write(b)
	}))
	t.Cleanup(up.Close)
	bucket := s3srv.MediaBucket()
	u, _ := url.Parse(up.URL)
	return &media.Copier{Bucket: bucket, HTTP: up.Client(), AllowedHosts: []string{u.Host}, MaxBytes: 1 << 20, AllowLoopback: true}, bucket, up
}

func TestCopyKeepsOutputsUnderTheServicesURL(t *testing.T) {
	img := pngBytes(t)
	c, bucket, up := setup(t, map[string][]byte{"/a.mp4": fakeMP4, "/b": img})
	ctx := context.Background()
	g1, g2 := "0b5c6a3e-7d1f-4f7a-9a4e-2c1d3e5f7a90", "7e2f9c14-3b6a-4d8e-8f1c-5a9b0c2d4e61"
	tests := []struct {
		src, key string
		kind     domain.MediaKind
		wantKey  string
		want     []byte
	}{
		{up.URL + "/a.mp4", media.OutputKeyBase(g1, 0), domain.MediaVideo, "generations/" + g1 + "/0.mp4", fakeMP4},
		{up.URL + "/b", media.OutputKeyBase(g2, 0), domain.MediaImage, "generations/" + g2 + "/0.png", img},
	}
	for _, tt := range tests {
		got, err := c.Copy(ctx, tt.src, tt.key, tt.kind)
		if err != nil {
			t.Fatalf("Copy(%s): %v", tt.src, err)
		}
		if got != bucket.URL(tt.wantKey) || strings.HasPrefix(got, up.URL) {
			t.Errorf("URL = %s, want the bucket's %s", got, bucket.URL(tt.wantKey))
		}
		resp, err := http.Get(got)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Equal(body, tt.want) {
			t.Errorf("downloaded %d bytes from %s, want the %d copied", len(body), got, len(tt.want))
		}
		if ok, err := bucket.Exists(ctx, tt.wantKey); !ok || err != nil {
			t.Errorf("Exists(%s) = %v, %v", tt.wantKey, ok, err)
		}
	}
	if ok, err := bucket.Exists(ctx, "generations/none.mp4"); ok || err != nil {
		t.Errorf("Exists(missing) = %v, %v", ok, err)
	}
}

func TestCopyRejectsWhatTheServiceWillNotKeep(t *testing.T) {
	big := append(append([]byte{}, fakeMP4...), bytes.Repeat([]byte{1}, 2<<20)...)
	c, bucket, up := setup(t, map[string][]byte{"/a.mp4": fakeMP4, "/img.png": pngBytes(t), "/text": []byte("<html>hello</html>"), "/big.mp4": big})
	tests := []struct {
		name, src string
		kind      domain.MediaKind
		rejected  bool
	}{
		{"image where a video was asked", up.URL + "/img.png", domain.MediaVideo, true},
		{"video where an image was asked", up.URL + "/a.mp4", domain.MediaImage, true},
		{"html", up.URL + "/text", domain.MediaImage, true},
		{"over the size cap", up.URL + "/big.mp4", domain.MediaVideo, true},
		{"another host", "https://evil.example/a.mp4", domain.MediaVideo, true},
		{"not http", "file:///etc/passwd", domain.MediaVideo, true},
		{"missing file", up.URL + "/gone.mp4", domain.MediaVideo, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Copy(context.Background(), tt.src, "generations/x/0", tt.kind)
			if err == nil {
				t.Fatal("Copy succeeded")
			}
			if errors.Is(err, media.ErrRejected) != tt.rejected {
				t.Errorf("err = %v; rejected=%v, want %v", err, errors.Is(err, media.ErrRejected), tt.rejected)
			}
		})
	}
	for _, key := range []string{"generations/x/0.mp4", "generations/x/0.png"} {
		if ok, _ := bucket.Exists(context.Background(), key); ok {
			t.Errorf("a rejected output was kept at %s", key)
		}
	}
}

// The copier admits an output only from an allowed host and port: an entry
// "host" means the scheme's default port, "host:port" that port, so another
// service on the upstream's machine is never fetched from.
func TestCopyChecksTheHostAndThePort(t *testing.T) {
	c, _, up := setup(t, map[string][]byte{"/a.mp4": fakeMP4})
	u, _ := url.Parse(up.URL)
	port := u.Port()
	tests := []struct {
		name    string
		allowed []string
		src     string
		ok      bool
	}{
		{"host and port listed", []string{"127.0.0.1:" + port}, up.URL + "/a.mp4", true},
		{"host listed in another case", []string{"LOCALHOST:" + port}, "http://localhost:" + port + "/a.mp4", true},
		{"host listed without a port: only port 80 for http", []string{"127.0.0.1"}, up.URL + "/a.mp4", false},
		{"another port of a listed host", []string{"127.0.0.1:" + port}, "http://127.0.0.1:1/a.mp4", false},
		{"the default port when an explicit one is listed", []string{"127.0.0.1:" + port}, "http://127.0.0.1/a.mp4", false},
		{"a bare host admits https on 443", []string{"cdn.example"}, "https://cdn.example:8443/a.mp4", false},
		{"IPv6 with a port", []string{"[::1]:" + port}, "http://[::1]:1/a.mp4", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc := &media.Copier{Bucket: c.Bucket, HTTP: c.HTTP, AllowedHosts: tt.allowed, MaxBytes: c.MaxBytes, AllowLoopback: true}
			_, err := cc.Copy(context.Background(), tt.src, "generations/p/0", domain.MediaVideo)
			if tt.ok && err != nil {
				t.Errorf("Copy(%s) with %v = %v, want copied", tt.src, tt.allowed, err)
			}
			if !tt.ok && (!errors.Is(err, media.ErrRejected) || !strings.Contains(err.Error(), "is not the upstream's")) {
				t.Errorf("Copy(%s) with %v = %v, want refused as not the upstream's", tt.src, tt.allowed, err)
			}
		})
	}
}

// A copy cut off by its context's deadline, in the middle of the body,
// leaves no object at its key: nothing half-copied is ever served.
func TestCopyCutOffLeavesNoObject(t *testing.T) {
	tests := []struct {
		name string
		sent int // bytes sent before the source stalls
	}{
		{"within the first part (one PutObject)", 100 << 10},
		{"after the first part (a multipart upload)", 6 << 20}, // the uploader's parts are 5 MiB
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, bucket, _ := setup(t, nil)
			body := append(append([]byte(nil), fakeMP4...), bytes.Repeat([]byte{0}, tt.sent-len(fakeMP4))...)
			slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(2*tt.sent))
				w.Write(body)
				w.(http.Flusher).Flush()
				<-r.Context().Done() // the rest never comes
			}))
			t.Cleanup(slow.Close)
			u, _ := url.Parse(slow.URL)
			c.AllowedHosts, c.MaxBytes = []string{u.Host}, 64<<20
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			keyBase := media.OutputKeyBase("0b5c6a3e-7d1f-4f7a-9a4e-2c1d3e5f7a90", 0)
			if got, err := c.Copy(ctx, slow.URL+"/a.mp4", keyBase, domain.MediaVideo); err == nil {
				t.Fatalf("Copy cut off = %s, want an error", got)
			}
			if ok, err := bucket.Exists(context.Background(), keyBase+".mp4"); err != nil || ok {
				t.Errorf("object after a cut-off copy: exists %v, %v; want none", ok, err)
			}
		})
	}
}
