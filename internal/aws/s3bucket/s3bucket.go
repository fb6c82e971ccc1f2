// Package s3bucket is the S3 adapter of media.Bucket: where outputs and
// long-form clips are stored and served from.
package s3bucket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// Bucket is the bucket adapter. Objects are uploaded in streamed parts (so
// no output is held in memory whole) and served from PublicBaseURL, the
// CloudFront distribution in front of the private bucket (locally: the
// S3-compatible server's bucket URL).
type Bucket struct {
	Client        *s3.Client
	Name          string
	PublicBaseURL string
	uploader      *manager.Uploader
}

var _ media.Bucket = (*Bucket)(nil)

// New wires the adapter. Encryption at rest is the bucket's default
// (set in the template), so uploads carry no encryption headers.
func New(client *s3.Client, bucket, publicBaseURL string) *Bucket {
	return &Bucket{Client: client, Name: bucket, PublicBaseURL: strings.TrimRight(publicBaseURL, "/"),
		uploader: manager.NewUploader(client, func(u *manager.Uploader) { u.Concurrency = 2 })}
}

// Put uploads body under key, with media.CacheControl: S3 keeps it with
// the object and CloudFront passes it on to every client.
func (b *Bucket) Put(ctx context.Context, key string, body io.Reader, contentType string) error {
	_, err := b.uploader.Upload(ctx, &s3.PutObjectInput{
		Bucket: aws.String(b.Name), Key: aws.String(key), Body: body, ContentType: aws.String(contentType),
		CacheControl: aws.String(media.CacheControl),
	})
	if err != nil {
		return fmt.Errorf("upload s3://%s/%s: %w", b.Name, key, err)
	}
	return nil
}

// URL is the public URL of key.
func (b *Bucket) URL(key string) string { return b.PublicBaseURL + "/" + escapeKey(key) }

// escapeKey is key URL-encoded segment by segment, as a URL's path and
// CopyObject's x-amz-copy-source take it.
func escapeKey(key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// Get reads a whole object of at most maxBytes; a larger one is an error,
// not a truncated read.
func (b *Bucket) Get(ctx context.Context, key string, maxBytes int64) ([]byte, error) {
	out, err := b.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("get s3://%s/%s: %w", b.Name, key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("get s3://%s/%s: %w", b.Name, key, err)
	}
	if int64(len(data)) > maxBytes {
		return nil, fmt.Errorf("get s3://%s/%s: over %d bytes", b.Name, key, maxBytes)
	}
	return data, nil
}

// Exists reports whether key is in the bucket.
func (b *Bucket) Exists(ctx context.Context, key string) (bool, error) {
	_, err := b.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)})
	if err == nil {
		return true, nil
	}
	var nf *types.NotFound
	if errors.As(err, &nf) {
		return false, nil
	}
	return false, fmt.Errorf("head s3://%s/%s: %w", b.Name, key, err)
}

// PutFile uploads a local file under key.
func (b *Bucket) PutFile(ctx context.Context, key, path, contentType string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("upload %s: %w", path, err)
	}
	defer f.Close()
	return b.Put(ctx, key, f, contentType)
}

// GetFile downloads key into a local file.
func (b *Bucket) GetFile(ctx context.Context, key, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("download s3://%s/%s: %w", b.Name, key, err)
	}
	defer f.Close()
	d := manager.NewDownloader(b.Client, func(d *manager.Downloader) { d.Concurrency = 2 })
	if _, err := d.Download(ctx, f, &s3.GetObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)}); err != nil {
		return fmt.Errorf("download s3://%s/%s: %w", b.Name, key, err)
	}
	return nil
}

var _ media.Objects = (*Bucket)(nil)

// Keys lists the keys under prefix, every page of them.
func (b *Bucket) Keys(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	pages := s3.NewListObjectsV2Paginator(b.Client, &s3.ListObjectsV2Input{Bucket: aws.String(b.Name), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list s3://%s/%s: %w", b.Name, prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys, nil
}

// maxDeleteKeys is the most keys one DeleteObjects request takes.
const maxDeleteKeys = 1000

// Delete deletes keys, up to 1,000 per request. S3 answers a key already
// gone as deleted, so a repeat succeeds.
func (b *Bucket) Delete(ctx context.Context, keys []string) error {
	for start := 0; start < len(keys); start += maxDeleteKeys {
		batch := keys[start:min(start+maxDeleteKeys, len(keys))]
		ids := make([]types.ObjectIdentifier, len(batch))
		for i, k := range batch {
			ids[i] = types.ObjectIdentifier{Key: aws.String(k)}
		}
		out, err := b.Client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(b.Name),
			Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return fmt.Errorf("delete %d objects of s3://%s: %w", len(batch), b.Name, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("delete s3://%s/%s: %s: %s (and %d more failed)", b.Name, aws.ToString(e.Key),
				aws.ToString(e.Code), aws.ToString(e.Message), len(out.Errors)-1)
		}
	}
	return nil
}

var _ media.Retainer = (*Bucket)(nil)

// Tag replaces the object's tags (sorted by key, so a repeat sends the
// same request).
func (b *Bucket) Tag(ctx context.Context, key string, tags map[string]string) error {
	set := make([]types.Tag, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		set = append(set, types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	_, err := b.Client.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String(b.Name), Key: aws.String(key),
		Tagging: &types.Tagging{TagSet: set}})
	if err != nil {
		return fmt.Errorf("tag s3://%s/%s: %w", b.Name, key, err)
	}
	return nil
}
