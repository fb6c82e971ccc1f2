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
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/mediagen-dev/mediagen/shared/media"
)

// Server is a running S3-compatible endpoint with one bucket.
type Server struct {
	Endpoint string
	Bucket   string
	srv      *http.Server
}

// Start serves on addr ("127.0.0.1:0" for any free port). dir, when not
// empty, keeps the objects in dir/objects.bolt.
func Start(ctx context.Context, addr, dir, bucket string) (*Server, error) {
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
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for the object store on %s: %w", addr, err)
	}
	s := &Server{Endpoint: "http://" + l.Addr().String(), Bucket: bucket,
		srv: &http.Server{Handler: faker.Server(), ReadHeaderTimeout: 10 * time.Second}}
	go s.srv.Serve(l)
	return s, nil
}

// Client is an S3 client for the server (path-style, static credentials).
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		BaseEndpoint: aws.String(s.Endpoint), UsePathStyle: true,
	})
}

// Bucket is the media adapter on this server; its URLs download on loopback.
func (s *Server) MediaBucket() *media.S3Bucket {
	return media.NewS3Bucket(s.Client(), s.Bucket, s.Endpoint+"/"+s.Bucket)
}

// Close stops the server.
func (s *Server) Close(ctx context.Context) error { return s.srv.Shutdown(ctx) }
