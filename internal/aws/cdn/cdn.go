// Package cdn is the CloudFront adapter of media.Invalidator: the media
// distribution in front of the output bucket drops the paths of deleted
// files from its caches.
package cdn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront/types"

	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// API is the one CloudFront call the adapter makes (*cloudfront.Client).
type api interface {
	CreateInvalidation(ctx context.Context, in *cloudfront.CreateInvalidationInput, opts ...func(*cloudfront.Options)) (*cloudfront.CreateInvalidationOutput, error)
}

// CloudFront invalidates paths of one distribution.
type CloudFront struct {
	API            api
	DistributionID string
}

var _ media.Invalidator = CloudFront{}

// Invalidate asks the distribution to drop paths. CloudFront acts within
// minutes and does not wait for it here; the first 1,000 paths a month are
// free, then $0.005 a path (a trailing "*" counts as one).
func (c CloudFront) Invalidate(ctx context.Context, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	if c.DistributionID == "" {
		return errors.New("invalidate: no distribution id")
	}
	ref := make([]byte, 12)
	if _, err := rand.Read(ref); err != nil {
		return fmt.Errorf("invalidate %v: caller reference: %w", paths, err)
	}
	_, err := c.API.CreateInvalidation(ctx, &cloudfront.CreateInvalidationInput{
		DistributionId: aws.String(c.DistributionID),
		InvalidationBatch: &types.InvalidationBatch{
			// Unique per request: the same reference twice is one
			// invalidation to CloudFront.
			CallerReference: aws.String(hex.EncodeToString(ref)),
			Paths:           &types.Paths{Quantity: aws.Int32(int32(len(paths))), Items: paths},
		},
	})
	if err != nil {
		return fmt.Errorf("invalidate %v on distribution %s: %w", paths, c.DistributionID, err)
	}
	return nil
}
