package objectstore

import (
	"context"
	"fmt"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// ExpiryRule is a lifecycle rule of the bucket: the objects under Prefix
// expire Days after they were written.
type ExpiryRule struct {
	Prefix string
	Days   int
}

// ExpiresAt is when S3's lifecycle deletes an object written at written
// under a rule of days: the days added, then rounded up to the next
// midnight UTC.
func ExpiresAt(written time.Time, days int) time.Time {
	t := written.UTC().AddDate(0, 0, days)
	midnight := t.Truncate(24 * time.Hour)
	if midnight.Equal(t) {
		return t
	}
	return midnight.Add(24 * time.Hour)
}

// Expire deletes the objects whose rule's expiry has come at now, as S3's
// lifecycle does, and reports how many. Like S3's, it touches nothing but
// the objects (the records' views derive their expiry themselves), and it
// goes to the backend directly: a lifecycle deletion is not a request, so
// the meter behind the S3 API does not count it.
func (s *Store) Expire(ctx context.Context, now time.Time, rules []ExpiryRule) (int, error) {
	deleted := 0
	for _, r := range rules {
		prefix := r.Prefix
		page := gofakes3.ListBucketPage{}
		for {
			if err := ctx.Err(); err != nil {
				return deleted, err
			}
			list, err := s.backend.ListBucket(s.Bucket, &gofakes3.Prefix{HasPrefix: true, Prefix: prefix}, page)
			if err != nil {
				return deleted, fmt.Errorf("expire %s: list: %w", prefix, err)
			}
			var due []string
			for _, c := range list.Contents {
				if !now.Before(ExpiresAt(c.LastModified.Time, r.Days)) {
					due = append(due, c.Key)
				}
			}
			if len(due) > 0 {
				res, err := s.backend.DeleteMulti(s.Bucket, due...)
				if err != nil {
					return deleted, fmt.Errorf("expire %s: delete: %w", prefix, err)
				}
				if err := res.AsError(); err != nil {
					return deleted, fmt.Errorf("expire %s: delete: %w", prefix, err)
				}
				deleted += len(due)
			}
			if !list.IsTruncated || len(list.Contents) == 0 {
				break
			}
			page = gofakes3.ListBucketPage{Marker: list.Contents[len(list.Contents)-1].Key, HasMarker: true}
		}
	}
	return deleted, nil
}
