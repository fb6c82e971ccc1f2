package lambdastack

import (
	"context"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// With IAM enforced, a request whose query has a "/" in a value (S3's
// ListObjectsV2 of a prefix, which a delete of a generation's outputs
// makes) is answered as S3 answers it: the SDK signs the value with "/"
// encoded as %2F, as SigV4 requires, and moto's server checks the
// signature against that query (scripts/moto_server.py).
func TestASignedQueryWithASlashIsAccepted(t *testing.T) {
	requireTools(t)
	ctx := context.Background()
	m, err := startMoto(ctx, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	s := &Stack{Moto: m}
	admin, err := s.createAdmin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Enforce(ctx); err != nil {
		t.Fatal(err)
	}
	client := s3.NewFromConfig(s.awsConfig(admin), func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("outputs")}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("outputs"), Key: aws.String("generations/g1/0.png")}); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"generations", "generations/g1/"} {
		out, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("outputs"), Prefix: aws.String(prefix)})
		if err != nil {
			t.Errorf("list %q: %v", prefix, err)
			continue
		}
		if len(out.Contents) != 1 {
			t.Errorf("list %q: %d objects, want 1", prefix, len(out.Contents))
		}
	}
}
