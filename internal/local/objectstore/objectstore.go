// Package objectstore runs the local stand-in for the output bucket and the
// CloudFront distribution in front of it, on two loopback listeners of
// their own (never on the API's origin):
//
//   - the S3 API (gofakes3), through which the service writes and reads with
//     the real S3 adapter; it answers only requests whose SigV4 signature
//     is right for its credentials (sigv4.go), or whose presigned URL
//     holds (presign.go: the uploads' PUT, the providers' GET), CORS only
//     as the bucket's rule allows (Config.CORS: the uploads' PUT), and (on
//     loopback) only requests naming a loopback host, so no page in a
//     browser can use it but with a URL the service presigned;
//   - the file origin, the base of every output URL the API returns: GET and
//     HEAD of the keys the API hands out, nothing else, each answer with the
//     content type stored at copy time, X-Content-Type-Options: nosniff and
//     Content-Security-Policy: sandbox, as the distribution serves them.
//
// With a data directory the objects are plain files under it and survive a
// restart; without one they live in memory.
package objectstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/mediagen-dev/mediagen/internal/adapters/netguard"
	"github.com/mediagen-dev/mediagen/internal/aws/s3bucket"
	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// AccessKey and SecretKey are the local S3 API's default credentials
// (Config's, when set, replace them): every request must carry a SigV4
// signature made with them, which a browser cannot send.
const AccessKey, SecretKey = "local", "local"

// Timeouts of the two servers. A file may be 512 MB: its answer may take
// half an hour (about 300 KB/s).
const (
	readTimeout       = 30 * time.Second
	filesWriteTimeout = 30 * time.Minute
	apiWriteTimeout   = 10 * time.Minute
	idleTimeout       = 2 * time.Minute
)

// Config says where the store keeps its objects and listens.
type Config struct {
	// Dir keeps the objects as files under Dir/objects; "" keeps them in
	// memory.
	Dir    string
	Bucket string
	// APIAddr is where the S3 API listens; default 127.0.0.1:0.
	APIAddr string
	// FilesAddr is where the file origin listens; default 127.0.0.1:0.
	FilesAddr string
	// AccessKey and SecretKey are the credentials the S3 API checks every
	// request's signature with; default the constants AccessKey and
	// SecretKey.
	AccessKey, SecretKey string
	// Wrap, when set, wraps the bucket's handler behind both servers' checks
	// (the runtime's cost meter counts the requests the bucket answers, as
	// S3 bills them; refused ones never reach S3 in AWS either).
	Wrap func(http.Handler) http.Handler
	// Now is the store's clock, which a presigned URL's expiry is checked
	// against (default time.Now); tests move it past the expiry.
	Now func() time.Time
	// CORS is the bucket's CORS rule (S3's CORSConfiguration, one rule),
	// or nil for none: the preflights it allows are answered, and the
	// presigned requests from an allowed origin carry its headers. The
	// requests signed in their header get no CORS answer whatever the
	// rule: no page holds the store's key.
	CORS *CORSRule
}

// CORSRule is a CORS rule of the bucket, as template.yaml's
// CorsConfiguration gives it.
type CORSRule struct {
	AllowedOrigins, AllowedMethods, AllowedHeaders []string
	MaxAgeSeconds                                  int
}

// Store is the running bucket: its S3 API and its file origin.
type Store struct {
	Bucket string
	// Endpoint is the S3 API's base URL, for the service's S3 client only.
	Endpoint string
	// FilesURL is the file origin's base URL: an output's URL is FilesURL
	// + "/" + its key.
	FilesURL string

	s3       http.Handler
	creds    aws.Credentials
	backend  gofakes3.Backend
	tags     *tags
	now      func() time.Time
	cors     *CORSRule
	api, fls *http.Server
}

// Start serves a store whose file origin listens on filesAddr.
func Start(ctx context.Context, filesAddr, dir, bucket string) (*Store, error) {
	return Serve(ctx, Config{Dir: dir, Bucket: bucket, FilesAddr: filesAddr})
}

// Serve opens the store and starts both listeners.
func Serve(ctx context.Context, cfg Config) (*Store, error) {
	backend, err := openBackend(cfg.Dir, cfg.Bucket)
	if err != nil {
		return nil, err
	}
	faker := gofakes3.New(backend, gofakes3.WithTimeSkewLimit(0), gofakes3.WithLogger(gofakes3.DiscardLog()))
	t, err := openTags(cfg.Dir)
	if err != nil {
		return nil, err
	}
	s := &Store{Bucket: cfg.Bucket, s3: t.handler(cfg.Bucket, backend, keepCacheControl(faker.Server())), backend: backend, tags: t,
		creds: aws.Credentials{AccessKeyID: cmp.Or(cfg.AccessKey, AccessKey), SecretAccessKey: cmp.Or(cfg.SecretKey, SecretKey)}, now: cfg.Now, cors: cfg.CORS}
	if s.now == nil {
		s.now = time.Now
	}
	if cfg.Wrap != nil {
		s.s3 = cfg.Wrap(s.s3)
	}
	apiLn, err := listen(cfg.APIAddr, "the object store's S3 API")
	if err != nil {
		return nil, err
	}
	filesLn, err := listen(cfg.FilesAddr, "the object store's file origin")
	if err != nil {
		apiLn.Close()
		return nil, err
	}
	s.Endpoint, s.FilesURL = "http://"+apiLn.Addr().String(), "http://"+filesLn.Addr().String()
	s.api = &http.Server{Handler: s.apiHandler(apiLn.Addr()), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: apiWriteTimeout, WriteTimeout: apiWriteTimeout, IdleTimeout: idleTimeout}
	s.fls = &http.Server{Handler: s.filesHandler(), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: readTimeout, WriteTimeout: filesWriteTimeout, IdleTimeout: idleTimeout}
	go s.api.Serve(apiLn)
	go s.fls.Serve(filesLn)
	return s, nil
}

func openBackend(dir, bucket string) (gofakes3.Backend, error) {
	if dir == "" {
		mem := s3mem.New()
		if err := mem.CreateBucket(bucket); err != nil {
			return nil, fmt.Errorf("create bucket %s: %w", bucket, err)
		}
		return mem, nil
	}
	objects, err := s3afero.FsPath(filepath.Join(dir, "objects"), s3afero.FsPathCreateAll)
	if err != nil {
		return nil, fmt.Errorf("open object store in %s: %w", dir, err)
	}
	meta, err := s3afero.FsPath(filepath.Join(dir, "objects-meta"), s3afero.FsPathCreateAll)
	if err != nil {
		return nil, fmt.Errorf("open object store in %s: %w", dir, err)
	}
	backend, err := s3afero.SingleBucket(bucket, objects, meta)
	if err != nil {
		return nil, fmt.Errorf("open object store in %s: %w", dir, err)
	}
	return backend, nil
}

func listen(addr, what string) (net.Listener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for %s on %s: %w", what, addr, err)
	}
	return l, nil
}

// apiHandler is the S3 API for the service: requests signed with the
// store's credentials only (403 AccessDenied, InvalidAccessKeyId or
// SignatureDoesNotMatch otherwise, as S3 answers), on a loopback listener
// only ones naming a loopback host (a page that rebinds its own name to
// 127.0.0.1 sends its own name), and never CORS.
func (s *Store) apiHandler(listening net.Addr) http.Handler {
	loopback := false
	if ap, err := netip.ParseAddrPort(listening.String()); err == nil {
		loopback = netguard.Loopback(ap.Addr())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case loopback && !loopbackHost(r.Host):
			http.Error(w, "the object store's S3 API answers requests to a loopback host only", http.StatusForbidden)
		case r.Method == http.MethodOptions:
			s.preflight(w, r)
		case presigned(r):
			cors := s.corsHeaders(r, r.Method)
			if err := verifyPresigned(r, s.creds, s.now()); err != nil {
				for k, v := range cors {
					w.Header()[k] = v
				}
				writePresignError(w, err)
				return
			}
			s.s3.ServeHTTP(noCORS{withCORS{w, cors}}, r)
		default:
			if err := verifySigV4(r, s.creds); err != nil {
				writeS3Error(w, err)
				return
			}
			s.s3.ServeHTTP(noCORS{w}, r)
		}
	})
}

// loopbackHost reports whether a Host header names this machine.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && netguard.Loopback(a)
}

// servedTypes are the content types the copier stores (it sniffs them),
// and a long video's WebVTT captions (text/vtt, always UTF-8);
// anything else is served as a download of unknown type.
var servedTypes = map[string]bool{"video/mp4": true, "text/vtt": true, "image/png": true, "image/jpeg": true, "image/webp": true}

// filesHandler is the file origin: GET and HEAD of a published key, the
// query ignored (as the distribution's cache policy ignores it, so no
// response-content-type override or listing reaches the bucket).
func (s *Store) filesHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "sandbox")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "read only: GET and HEAD", http.StatusMethodNotAllowed)
			return
		}
		key := strings.TrimPrefix(r.URL.Path, "/")
		if !media.Published(key) {
			http.NotFound(w, r)
			return
		}
		in := r.Clone(r.Context())
		in.URL = &url.URL{Path: "/" + s.Bucket + "/" + key}
		in.RequestURI, in.Header = "", http.Header{}
		for _, name := range []string{"Range", "If-None-Match", "If-Modified-Since"} {
			if v := r.Header.Get(name); v != "" {
				in.Header.Set(name, v)
			}
		}
		s.s3.ServeHTTP(&fileAnswer{w: w, method: r.Method}, in)
	})
}

// fileAnswer passes on an object's answer with only the headers a file
// needs, its stored type checked; an S3 error becomes a plain 404 (or the
// status it is), with no S3 detail.
type fileAnswer struct {
	w      http.ResponseWriter
	method string
	header http.Header
	wrote  bool
	failed bool
}

func (f *fileAnswer) Header() http.Header {
	if f.header == nil {
		f.header = http.Header{}
	}
	return f.header
}

var passedHeaders = []string{"Content-Length", "Content-Range", "Accept-Ranges", "ETag", "Last-Modified", "Cache-Control"}

func (f *fileAnswer) WriteHeader(code int) {
	if f.wrote {
		return
	}
	f.wrote = true
	out := f.w.Header()
	if code >= 400 {
		f.failed = true
		if code == http.StatusInternalServerError || code == http.StatusNotImplemented {
			code = http.StatusNotFound
		}
		http.Error(f.w, http.StatusText(code), code)
		return
	}
	for _, name := range passedHeaders {
		if v := f.Header().Get(name); v != "" {
			out.Set(name, v)
		}
	}
	ctype := f.Header().Get("Content-Type")
	if !servedTypes[ctype] {
		ctype = "application/octet-stream"
	}
	out.Set("Content-Type", ctype)
	f.w.WriteHeader(code)
}

func (f *fileAnswer) Write(b []byte) (int, error) {
	if !f.wrote {
		f.WriteHeader(http.StatusOK)
	}
	if f.failed {
		return len(b), nil
	}
	return f.w.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (f *fileAnswer) Unwrap() http.ResponseWriter { return f.w }

// cacheControlMeta is where the store keeps an object's Cache-Control:
// S3 keeps it with the object (system metadata, given at PutObject,
// CreateMultipartUpload or CopyObject and answered by GetObject and
// HeadObject); gofakes3 keeps only Content-Type, Content-Disposition,
// Content-Encoding and X-Amz-* headers.
const cacheControlMeta = "X-Amz-Meta-Objectstore-Cache-Control"

// keepCacheControl stores a write's Cache-Control as metadata gofakes3
// keeps, and answers it back as Cache-Control.
func keepCacheControl(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(cacheControlMeta) // only this store writes it
		if v := r.Header.Get("Cache-Control"); v != "" && (r.Method == http.MethodPut || r.Method == http.MethodPost) {
			r.Header.Set(cacheControlMeta, v)
		}
		answer := &cacheControlAnswer{ResponseWriter: w}
		next.ServeHTTP(answer, r)
		if !answer.wrote {
			// gofakes3 answers HEAD with headers alone, which net/http
			// sends as a 200 once the handler returns: so does this.
			answer.WriteHeader(http.StatusOK)
		}
	})
}

type cacheControlAnswer struct {
	http.ResponseWriter
	wrote bool
}

func (c *cacheControlAnswer) WriteHeader(code int) {
	if !c.wrote {
		c.wrote = true
		h := c.ResponseWriter.Header()
		if v := h.Get(cacheControlMeta); v != "" {
			h.Set("Cache-Control", v)
		}
		h.Del(cacheControlMeta)
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *cacheControlAnswer) Write(b []byte) (int, error) {
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(b)
}

func (c *cacheControlAnswer) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// preflight answers a CORS preflight with the bucket's rule
// (CORSRule.Preflight).
func (s *Store) preflight(w http.ResponseWriter, r *http.Request) { s.cors.Preflight(w, r) }

// corsHeaders are the rule's headers for r (CORSRule.Headers).
func (s *Store) corsHeaders(r *http.Request, method string) http.Header {
	return s.cors.Headers(r, method)
}

// Preflight answers a CORS preflight as S3 does with a bucket's CORS
// rule: 200 with the rule's headers when the origin, the method and the
// headers asked for are allowed; 403 otherwise (and always without a
// rule, a nil rule).
func (rule *CORSRule) Preflight(w http.ResponseWriter, r *http.Request) {
	h := rule.Headers(r, r.Header.Get("Access-Control-Request-Method"))
	if h == nil {
		http.Error(w, "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.", http.StatusForbidden)
		return
	}
	for _, asked := range strings.Split(r.Header.Get("Access-Control-Request-Headers"), ",") {
		asked = strings.ToLower(strings.TrimSpace(asked))
		if asked != "" && !slices.ContainsFunc(rule.AllowedHeaders, func(a string) bool { return a == "*" || strings.EqualFold(a, asked) }) {
			http.Error(w, "CORSResponse: This CORS request is not allowed: header "+asked+" is not allowed.", http.StatusForbidden)
			return
		}
	}
	for k, v := range h {
		w.Header()[k] = v
	}
	if asked := r.Header.Get("Access-Control-Request-Headers"); asked != "" {
		w.Header().Set("Access-Control-Allow-Headers", asked)
	}
	if rule.MaxAgeSeconds > 0 {
		w.Header().Set("Access-Control-Max-Age", strconv.Itoa(rule.MaxAgeSeconds))
	}
	w.WriteHeader(http.StatusOK)
}

// Headers are the CORS headers of an answer to r's origin for method
// under the rule; nil when there is no rule, no Origin, or the rule does
// not allow them.
func (rule *CORSRule) Headers(r *http.Request, method string) http.Header {
	origin := r.Header.Get("Origin")
	if rule == nil || origin == "" || !slices.Contains(rule.AllowedMethods, method) {
		return nil
	}
	allowed := ""
	switch {
	case slices.Contains(rule.AllowedOrigins, "*"):
		allowed = "*"
	case slices.Contains(rule.AllowedOrigins, origin):
		allowed = origin
	default:
		return nil
	}
	h := http.Header{}
	h.Set("Access-Control-Allow-Origin", allowed)
	h.Set("Access-Control-Allow-Methods", strings.Join(rule.AllowedMethods, ", "))
	h.Set("Vary", "Origin, Access-Control-Request-Headers, Access-Control-Request-Method")
	return h
}

// withCORS sets the rule's CORS headers on an answer, after noCORS has
// dropped gofakes3's own.
type withCORS struct {
	http.ResponseWriter
	h http.Header
}

func (c withCORS) WriteHeader(code int) {
	for k, v := range c.h {
		c.ResponseWriter.Header()[k] = v
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c withCORS) Write(b []byte) (int, error) {
	for k, v := range c.h {
		if c.ResponseWriter.Header().Get(k) == "" {
			c.ResponseWriter.Header()[k] = v
		}
	}
	return c.ResponseWriter.Write(b)
}

func (c withCORS) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// noCORS drops the CORS headers gofakes3 sets on every answer.
type noCORS struct{ http.ResponseWriter }

func (n noCORS) WriteHeader(code int) {
	stripCORS(n.ResponseWriter.Header())
	n.ResponseWriter.WriteHeader(code)
}

func (n noCORS) Write(b []byte) (int, error) {
	stripCORS(n.ResponseWriter.Header())
	return n.ResponseWriter.Write(b)
}

func (n noCORS) Unwrap() http.ResponseWriter { return n.ResponseWriter }

func stripCORS(h http.Header) {
	for name := range h {
		if strings.HasPrefix(strings.ToLower(name), "access-control-") {
			delete(h, name)
		}
	}
}

// Client is an S3 client of the store's API (path-style, the local
// credentials).
func (s *Store) Client() *s3.Client {
	return s3.New(s3.Options{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(s.creds.AccessKeyID, s.creds.SecretAccessKey, ""),
		BaseEndpoint: aws.String(s.Endpoint), UsePathStyle: true,
	})
}

// MediaBucket is the media adapter on this store: it writes through the S3
// API, and its URLs are on the file origin.
func (s *Store) MediaBucket() *s3bucket.Bucket {
	return s3bucket.New(s.Client(), s.Bucket, s.FilesURL)
}

// Close stops both listeners, letting the requests in flight finish until
// ctx ends; then it cuts the connections left (and reports ctx's error).
func (s *Store) Close(ctx context.Context) error {
	var errs []error
	for _, srv := range []*http.Server{s.api, s.fls} {
		if srv == nil {
			continue
		}
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, err, srv.Close())
		}
	}
	return errors.Join(errs...)
}
