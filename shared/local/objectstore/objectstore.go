// Package objectstore runs an in-process S3-compatible server (gofakes3) on
// loopback, so the local runtime and the tests use the real S3 adapter. With
// a data directory the objects are plain files under it and survive a
// restart; without one they live in memory.
package objectstore

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/mediagen-dev/mediagen/shared/media"
)

// Store is an S3-compatible endpoint with one bucket. Serve its Handler on
// its own listener (Start) or under a path prefix of another server.
type Store struct {
	Bucket   string
	Endpoint string // set once served
	handler  http.Handler
	srv      *http.Server
}

// New opens the store. dir, when not empty, keeps the objects as files under
// dir/objects; otherwise they live in memory.
func New(dir, bucket string) (*Store, error) {
	var backend gofakes3.Backend
	if dir != "" {
		objects, err := s3afero.FsPath(filepath.Join(dir, "objects"), s3afero.FsPathCreateAll)
		if err != nil {
			return nil, fmt.Errorf("open object store in %s: %w", dir, err)
		}
		meta, err := s3afero.FsPath(filepath.Join(dir, "objects-meta"), s3afero.FsPathCreateAll)
		if err != nil {
			return nil, fmt.Errorf("open object store in %s: %w", dir, err)
		}
		if backend, err = s3afero.SingleBucket(bucket, objects, meta); err != nil {
			return nil, fmt.Errorf("open object store in %s: %w", dir, err)
		}
	} else {
		mem := s3mem.New()
		if err := mem.CreateBucket(bucket); err != nil {
			return nil, fmt.Errorf("create bucket %s: %w", bucket, err)
		}
		backend = mem
	}
	faker := gofakes3.New(backend, gofakes3.WithTimeSkewLimit(0), gofakes3.WithLogger(gofakes3.DiscardLog()))
	return &Store{Bucket: bucket, handler: faker.Server()}, nil
}

// Mount serves the store under prefix ("/s3") of a server whose base URL is
// baseURL, and sets Endpoint.
func (s *Store) Mount(mux *http.ServeMux, baseURL, prefix string) {
	mux.Handle(prefix+"/", http.StripPrefix(prefix, s.handler))
	s.Endpoint = strings.TrimRight(baseURL, "/") + prefix
}

// Start opens a store and serves it on its own listener at addr
// ("127.0.0.1:0" for any free port).
func Start(ctx context.Context, addr, dir, bucket string) (*Store, error) {
	s, err := New(dir, bucket)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for the object store on %s: %w", addr, err)
	}
	s.Endpoint = "http://" + l.Addr().String()
	s.srv = &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(l)
	return s, nil
}

// Client is an S3 client for the store (path-style, static credentials).
func (s *Store) Client() *s3.Client {
	return s3.New(s3.Options{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		BaseEndpoint: aws.String(s.Endpoint), UsePathStyle: true,
	})
}

// MediaBucket is the media adapter on this store; its URLs download on
// loopback without credentials.
func (s *Store) MediaBucket() *media.S3Bucket {
	return media.NewS3Bucket(s.Client(), s.Bucket, s.Endpoint+"/"+s.Bucket)
}

// Close stops the store's own listener, if it has one.
func (s *Store) Close(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Shutdown(ctx)
}
