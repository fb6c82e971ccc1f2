package longform_test

import (
	"context"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/aws/s3bucket"
	"github.com/mediagen-dev/mediagen/internal/local/objectstore"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// outputsBucket is the media bucket of a local object store (the S3
// adapter against an S3 protocol server) that closes with the test.
func outputsBucket(t *testing.T) *s3bucket.Bucket {
	t.Helper()
	objects, err := objectstore.Start(context.Background(), "127.0.0.1:0", "", "outputs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitfor.Close(t, objects.Close) })
	return objects.MediaBucket()
}
