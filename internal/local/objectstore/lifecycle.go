package objectstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// ExpiryRule is a lifecycle rule of the bucket: the objects under Prefix
// ("" for all) that carry the tag Tag=Value (none when Tag is "") expire
// Days after they were written.
type ExpiryRule struct {
	Prefix     string
	Tag, Value string
	Days       int
}

func (r ExpiryRule) matches(key string, tags map[string]string) bool {
	if !strings.HasPrefix(key, r.Prefix) {
		return false
	}
	v, ok := tags[r.Tag]
	return r.Tag == "" || (ok && v == r.Value)
}

// expiresAt is when S3's lifecycle deletes an object written at written
// under a rule of days: the days added, then rounded up to the next
// midnight UTC.
func expiresAt(written time.Time, days int) time.Time {
	t := written.UTC().AddDate(0, 0, days)
	midnight := t.Truncate(24 * time.Hour)
	if midnight.Equal(t) {
		return t
	}
	return midnight.Add(24 * time.Hour)
}

// Expire deletes the objects that a rule has expired at now, as S3's
// lifecycle does (where several rules match an object, the one that
// expires it first), and reports how many. Like S3's, it touches nothing
// but the objects: the records' views derive their expiry themselves. It
// goes to the backend directly: a lifecycle deletion is not a request, so
// the meter behind the S3 API does not count it.
func (s *Store) Expire(ctx context.Context, now time.Time, rules []ExpiryRule) (int, error) {
	deleted := 0
	page := gofakes3.ListBucketPage{}
	for {
		if err := ctx.Err(); err != nil {
			return deleted, err
		}
		list, err := s.backend.ListBucket(s.Bucket, &gofakes3.Prefix{}, page)
		if err != nil {
			return deleted, fmt.Errorf("expire: list: %w", err)
		}
		var due []string
		for _, c := range list.Contents {
			tags := s.tags.of(c.Key)
			for _, r := range rules {
				if r.matches(c.Key, tags) && !now.Before(expiresAt(c.LastModified.Time, r.Days)) {
					due = append(due, c.Key)
					break
				}
			}
		}
		if len(due) > 0 {
			res, err := s.backend.DeleteMulti(s.Bucket, due...)
			if err == nil {
				err = res.AsError()
			}
			if err != nil {
				return deleted, fmt.Errorf("expire: delete: %w", err)
			}
			gone := map[string]map[string]string{}
			for _, k := range due {
				gone[k] = nil
			}
			if err := s.tags.set(gone); err != nil {
				return deleted, err
			}
			deleted += len(due)
		}
		if !list.IsTruncated || len(list.Contents) == 0 {
			return deleted, nil
		}
		page = gofakes3.ListBucketPage{Marker: list.Contents[len(list.Contents)-1].Key, HasMarker: true}
	}
}
