package s3bucket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// The uploads' side of the bucket: presigned URLs, signed with the
// function's own credentials (its role's session), which the URL carries
// no part of but the access key id and the session token's proof.
var (
	_ media.UploadSigner = (*Bucket)(nil)
	_ media.FileObjects  = (*Bucket)(nil)
)

// PresignPut is a URL that takes a PUT of key with Content-Type
// contentType and, when size > 0, Content-Length size, both signed (S3
// refuses any other with 403 SignatureDoesNotMatch), until lifetime has
// passed. With size 0 no length is signed.
func (b *Bucket) PresignPut(ctx context.Context, key, contentType string, size int64, lifetime time.Duration) (string, error) {
	in := &s3.PutObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key), ContentType: aws.String(contentType)}
	if size > 0 {
		in.ContentLength = aws.Int64(size)
	}
	req, err := s3.NewPresignClient(b.Client).PresignPutObject(ctx, in, s3.WithPresignExpires(lifetime))
	if err != nil {
		return "", fmt.Errorf("presign PUT s3://%s/%s: %w", b.Name, key, err)
	}
	return req.URL, nil
}

// PresignGet is a URL that reads key until lifetime has passed.
func (b *Bucket) PresignGet(ctx context.Context, key string, lifetime time.Duration) (string, error) {
	req, err := s3.NewPresignClient(b.Client).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)},
		s3.WithPresignExpires(lifetime))
	if err != nil {
		return "", fmt.Errorf("presign GET s3://%s/%s: %w", b.Name, key, err)
	}
	return req.URL, nil
}

// Size is an object's size, found by listing its key (a role that may
// list the prefix gets no answer but the listing for a missing key: a
// HeadObject would be 403); a missing object is domain.ErrNotFound.
func (b *Bucket) Size(ctx context.Context, key string) (int64, error) {
	out, err := b.Client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b.Name), Prefix: aws.String(key), MaxKeys: aws.Int32(1)})
	if err != nil {
		return 0, fmt.Errorf("list s3://%s/%s: %w", b.Name, key, err)
	}
	if len(out.Contents) == 0 || aws.ToString(out.Contents[0].Key) != key {
		return 0, fmt.Errorf("s3://%s/%s: %w", b.Name, key, domain.ErrNotFound)
	}
	return aws.ToInt64(out.Contents[0].Size), nil
}

// Copy copies src to dst inside the bucket, server side (CopyObject: up
// to 5 GB in one request, the content type copied with the bytes). The
// caller needs s3:GetObject on src and s3:PutObject on dst.
func (b *Bucket) Copy(ctx context.Context, src, dst string) error {
	_, err := b.Client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b.Name), Key: aws.String(dst),
		CopySource: aws.String(b.Name + "/" + escapeKey(src))})
	if err != nil {
		return fmt.Errorf("copy s3://%s/%s to %s: %w", b.Name, src, dst, err)
	}
	return nil
}

// Head is the size and stored content type of key (HeadObject, which
// s3:GetObject allows); a 404 is domain.ErrNotFound.
func (b *Bucket) Head(ctx context.Context, key string) (int64, string, error) {
	out, err := b.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)})
	var nf *types.NotFound
	switch {
	case errors.As(err, &nf):
		// 404 only to a role that may list the key; 403 otherwise.
		return 0, "", fmt.Errorf("head s3://%s/%s: %w", b.Name, key, domain.ErrNotFound)
	case err != nil:
		return 0, "", fmt.Errorf("head s3://%s/%s: %w", b.Name, key, err)
	}
	return aws.ToInt64(out.ContentLength), aws.ToString(out.ContentType), nil
}

// ReadStart reads the first n bytes of key (a ranged GET) and its stored
// content type.
func (b *Bucket) ReadStart(ctx context.Context, key string, n int64) ([]byte, string, error) {
	out, err := b.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key),
		Range: aws.String(fmt.Sprintf("bytes=0-%d", n-1))})
	if err != nil {
		return nil, "", fmt.Errorf("get s3://%s/%s: %w", b.Name, key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, n))
	if err != nil {
		return nil, "", fmt.Errorf("get s3://%s/%s: %w", b.Name, key, err)
	}
	return data, aws.ToString(out.ContentType), nil
}
