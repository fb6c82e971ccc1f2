package objectstore

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
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
		if got := ExpiresAt(written, tt.days).Format(time.RFC3339); got != tt.want {
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
			t.Cleanup(func() { s.Close(ctx) })
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
				{ExpiresAt(written, 1).Add(time.Minute), []string{"generations/g1/0.png", "generations/g1/1.png", "other/kept.txt"}},
				{ExpiresAt(written, 30).Add(-time.Hour), []string{"generations/g1/0.png", "generations/g1/1.png", "other/kept.txt"}},
				{ExpiresAt(written, 30).Add(time.Minute), []string{"other/kept.txt"}},
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
