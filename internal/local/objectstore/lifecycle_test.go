package objectstore

import (
	"context"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

func TestExpiresAtRoundsUpToTheNextMidnightUTC(t *testing.T) {
	tests := []struct {
		written string
		days    int
		want    string
	}{
		{"2026-01-15T10:30:00Z", 1, "2026-01-17T00:00:00Z"},
		{"2026-01-15T00:00:00Z", 1, "2026-01-16T00:00:00Z"},
		{"2026-01-31T23:59:59Z", 30, "2026-03-03T00:00:00Z"},
		{"2026-01-15T10:30:00+05:00", 30, "2026-02-15T00:00:00Z"},
	}
	for _, tt := range tests {
		written, _ := time.Parse(time.RFC3339, tt.written)
		if got := expiresAt(written, tt.days).Format(time.RFC3339); got != tt.want {
			t.Errorf("ExpiresAt(%s, %d) = %s, want %s", tt.written, tt.days, got, tt.want)
		}
	}
}

// TestExpireDeletesOnlyTheObjectsPastTheirRule, on both backends: nothing
// before the rule's expiry, then every object under the rule's prefix and
// nothing else.
func TestExpireDeletesOnlyTheObjectsPastTheirRule(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		name := "in memory"
		if dir != "" {
			name = "on disk"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, err := Serve(ctx, Config{Dir: dir, Bucket: "outputs"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { waitfor.Close(t, s.Close) })
			b := s.MediaBucket()
			keys := []string{"generations/g1/0.png", "generations/g1/1.png", "long-videos/v1/final.mp4", "other/kept.txt"}
			for _, k := range keys {
				if err := b.Put(ctx, k, strings.NewReader("x"), "image/png"); err != nil {
					t.Fatal(err)
				}
			}
			written := time.Now()
			rules := []ExpiryRule{{Prefix: "generations/", Days: 30}, {Prefix: "long-videos/", Days: 1}}
			list := func() []string {
				var all []string
				for _, p := range []string{"generations/", "long-videos/", "other/"} {
					ks, err := b.Keys(ctx, p)
					if err != nil {
						t.Fatal(err)
					}
					all = append(all, ks...)
				}
				return all
			}
			steps := []struct {
				at   time.Time
				want []string
			}{
				{written.Add(time.Hour), keys},
				{expiresAt(written, 1).Add(time.Minute), []string{"generations/g1/0.png", "generations/g1/1.png", "other/kept.txt"}},
				{expiresAt(written, 30).Add(-time.Hour), []string{"generations/g1/0.png", "generations/g1/1.png", "other/kept.txt"}},
				{expiresAt(written, 30).Add(time.Minute), []string{"other/kept.txt"}},
			}
			for _, st := range steps {
				if _, err := s.Expire(ctx, st.at, rules); err != nil {
					t.Fatal(err)
				}
				if got := list(); !slices.Equal(got, st.want) {
					t.Errorf("at %s: objects %v, want %v", st.at.Format(time.RFC3339), got, st.want)
				}
			}
		})
	}
}

// TestTagsAreKeptAsS3KeepsThem: tagging an object changes its tags, not
// its content (gofakes3 alone would replace the object); a write of the
// object replaces its tags; a missing object cannot be tagged; and with a
// data directory the tags outlive a restart.
func TestTagsAreKeptAsS3KeepsThem(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Serve(ctx, Config{Dir: dir, Bucket: "outputs"})
	if err != nil {
		t.Fatal(err)
	}
	b, client := s.MediaBucket(), s.Client()
	const key = "generations/g1/0.png"
	if err := b.Put(ctx, key, strings.NewReader("the image"), "image/png"); err != nil {
		t.Fatal(err)
	}
	if err := b.Tag(ctx, key, map[string]string{"retention-days": "7"}); err != nil {
		t.Fatal(err)
	}
	tagsOf := func(s *Store) map[string]string {
		t.Helper()
		out, err := s.Client().GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String("outputs"), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, tag := range out.TagSet {
			m[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
		}
		return m
	}
	if got := tagsOf(s); !maps.Equal(got, map[string]string{"retention-days": "7"}) {
		t.Errorf("tags %v", got)
	}
	obj, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("outputs"), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	if string(body) != "the image" || aws.ToString(obj.ContentType) != "image/png" {
		t.Errorf("after tagging the object is %q (%s)", body, aws.ToString(obj.ContentType))
	}
	if err := b.Tag(ctx, "generations/g1/missing.png", map[string]string{"retention-days": "7"}); err == nil {
		t.Error("tagging a missing object succeeded")
	}
	waitfor.Close(t, s.Close)
	again, err := Serve(ctx, Config{Dir: dir, Bucket: "outputs"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitfor.Close(t, again.Close) })
	if got := tagsOf(again); got["retention-days"] != "7" {
		t.Errorf("after a restart the tags are %v", got)
	}
	if err := again.MediaBucket().Put(ctx, key, strings.NewReader("written again"), "image/png"); err != nil {
		t.Fatal(err)
	}
	if got := tagsOf(again); len(got) != 0 {
		t.Errorf("a new write kept the old tags %v", got)
	}
}

// TestExpireAppliesTheShortestMatchingRule: an object tagged with a
// shorter retention goes at its tag rule's time, the others at their
// prefix rule's.
func TestExpireAppliesTheShortestMatchingRule(t *testing.T) {
	ctx := context.Background()
	s, err := Serve(ctx, Config{Bucket: "outputs"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitfor.Close(t, s.Close) })
	b := s.MediaBucket()
	for _, k := range []string{"generations/short/0.png", "generations/long/0.png"} {
		if err := b.Put(ctx, k, strings.NewReader("x"), "image/png"); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Tag(ctx, "generations/short/0.png", map[string]string{"retention-days": "1"}); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	rules := []ExpiryRule{{Prefix: "generations/", Days: 30}, {Tag: "retention-days", Value: "1", Days: 1}}
	if n, err := s.Expire(ctx, expiresAt(written, 1).Add(time.Minute), rules); err != nil || n != 1 {
		t.Errorf("a day on: expired %d (%v), want the tagged object", n, err)
	}
	if keys, _ := b.Keys(ctx, "generations/"); !slices.Equal(keys, []string{"generations/long/0.png"}) {
		t.Errorf("left %v", keys)
	}
	if n, err := s.Expire(ctx, expiresAt(written, 30).Add(time.Minute), rules); err != nil || n != 1 {
		t.Errorf("30 days on: expired %d (%v), want the other", n, err)
	}
}
