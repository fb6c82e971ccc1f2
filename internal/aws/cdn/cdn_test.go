package cdn

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront"
)

// fakeAPI is CloudFront's CreateInvalidation: no local server speaks
// CloudFront, so the test stops at the wire call.
type fakeAPI struct {
	inputs []*cloudfront.CreateInvalidationInput
	err    error
}

func (f *fakeAPI) CreateInvalidation(_ context.Context, in *cloudfront.CreateInvalidationInput, _ ...func(*cloudfront.Options)) (*cloudfront.CreateInvalidationOutput, error) {
	f.inputs = append(f.inputs, in)
	return &cloudfront.CreateInvalidationOutput{}, f.err
}

func TestInvalidateAsksTheDistributionForExactlyThePaths(t *testing.T) {
	ctx := context.Background()
	api := &fakeAPI{}
	c := CloudFront{API: api, DistributionID: "E2EXAMPLE"}
	paths := []string{"/generations/g1/*"}
	for range 2 {
		if err := c.Invalidate(ctx, paths); err != nil {
			t.Fatal(err)
		}
	}
	if len(api.inputs) != 2 {
		t.Fatalf("%d calls, want 2", len(api.inputs))
	}
	for _, in := range api.inputs {
		b := in.InvalidationBatch
		if aws.ToString(in.DistributionId) != "E2EXAMPLE" || !slices.Equal(b.Paths.Items, paths) || aws.ToInt32(b.Paths.Quantity) != 1 {
			t.Errorf("CreateInvalidation(%s, %v, quantity %d), want E2EXAMPLE, %v, 1", aws.ToString(in.DistributionId), b.Paths.Items, aws.ToInt32(b.Paths.Quantity), paths)
		}
	}
	// CloudFront takes a repeated caller reference for the same request
	// and does nothing: each invalidation needs its own.
	if r0, r1 := aws.ToString(api.inputs[0].InvalidationBatch.CallerReference), aws.ToString(api.inputs[1].InvalidationBatch.CallerReference); r0 == "" || r0 == r1 {
		t.Errorf("caller references %q and %q, want two different ones", r0, r1)
	}

	if err := c.Invalidate(ctx, nil); err != nil || len(api.inputs) != 2 {
		t.Errorf("no paths: %v, %d calls; want nothing asked", err, len(api.inputs))
	}
	api.err = errors.New("TooManyInvalidationsInProgress")
	if err := c.Invalidate(ctx, paths); !errors.Is(err, api.err) {
		t.Errorf("a refused invalidation answers %v, want it wrapped", err)
	}
	if err := (CloudFront{API: api}).Invalidate(ctx, paths); err == nil {
		t.Error("no distribution id: no error")
	}
}
