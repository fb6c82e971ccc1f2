package lambdastack

import (
	"context"
	"io"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudfront/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// With IAM enforced, a request whose query has a "/" in a value (S3's
// ListObjectsV2 of a prefix, which a delete of a generation's outputs
// makes) is answered as S3 answers it: the SDK signs the value with "/"
// encoded as %2F, as SigV4 requires, and moto's server checks the
// signature against that query (scripts/moto_server.py).
func TestASignedQueryWithASlashIsAccepted(t *testing.T) {
	ctx := context.Background()
	cfg := enforcedMoto(t)
	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
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

// With IAM enforced, a GET of a REST service other than S3, with no body
// and with or without a query (CloudFront's GetDistribution,
// ListInvalidations, GetInvalidation), is answered as AWS answers it:
// moto's server checks the signature over the empty body the SDK signed
// (scripts/moto_server.py).
func TestASignedGETWithoutABodyIsAccepted(t *testing.T) {
	ctx := context.Background()
	cfg := enforcedMoto(t)
	cf := cloudfront.NewFromConfig(cfg)
	made, err := cf.CreateDistribution(ctx, &cloudfront.CreateDistributionInput{DistributionConfig: &cftypes.DistributionConfig{
		CallerReference: aws.String("moto-test"), Comment: aws.String("media"), Enabled: aws.Bool(true),
		Origins: &cftypes.Origins{Quantity: aws.Int32(1), Items: []cftypes.Origin{{Id: aws.String("outputs"),
			DomainName: aws.String("outputs.s3.us-east-1.amazonaws.com"), S3OriginConfig: &cftypes.S3OriginConfig{OriginAccessIdentity: aws.String("")}}}},
		DefaultCacheBehavior: &cftypes.DefaultCacheBehavior{TargetOriginId: aws.String("outputs"), ViewerProtocolPolicy: cftypes.ViewerProtocolPolicyRedirectToHttps,
			CachePolicyId: aws.String("658327ea-f89d-4fab-a63d-7e88639e58f6")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	id := made.Distribution.Id
	inv, err := cf.CreateInvalidation(ctx, &cloudfront.CreateInvalidationInput{DistributionId: id, InvalidationBatch: &cftypes.InvalidationBatch{
		CallerReference: aws.String("r1"), Paths: &cftypes.Paths{Quantity: aws.Int32(1), Items: []string{"/generations/g1/*"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cf.GetDistribution(ctx, &cloudfront.GetDistributionInput{Id: id}); err != nil {
		t.Errorf("GetDistribution (a GET with no query): %v", err)
	}
	for _, max := range []*int32{nil, aws.Int32(10)} {
		list, err := cf.ListInvalidations(ctx, &cloudfront.ListInvalidationsInput{DistributionId: id, MaxItems: max})
		if err != nil || len(list.InvalidationList.Items) != 1 {
			t.Errorf("ListInvalidations (MaxItems %v): %v, %v; want the one made", max, list, err)
		}
	}
	got, err := cf.GetInvalidation(ctx, &cloudfront.GetInvalidationInput{DistributionId: id, Id: inv.Invalidation.Id})
	if err != nil || !slices.Equal(got.Invalidation.InvalidationBatch.Paths.Items, []string{"/generations/g1/*"}) {
		t.Errorf("GetInvalidation: %v, %v; want its path", got, err)
	}
}

// enforcedMoto starts moto's server with IAM enforced, stopped when the
// test ends, and answers the SDK configuration of its admin.
func enforcedMoto(t *testing.T) aws.Config {
	t.Helper()
	requireTools(t)
	ctx := context.Background()
	m, err := startMoto(ctx, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	s := &Stack{Moto: m}
	admin, err := s.createAdmin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Enforce(ctx); err != nil {
		t.Fatal(err)
	}
	return s.awsConfig(admin)
}
