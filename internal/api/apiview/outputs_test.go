package apiview

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// TestViewsServeURLsOnlyWhileTheFilesAreKept: a status view lists its
// output URLs only while no deletion began and the retention has not
// ended; data_removed says when they are gone, and output_expires_at when
// they go.
func TestViewsServeURLsOnlyWhileTheFilesAreKept(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	expires := now.Add(time.Hour)
	tests := []struct {
		name        string
		status      domain.Status
		files       domain.StoredFiles
		served      bool
		removed     bool
		wantExpires string
	}{
		{"processing", domain.StatusProcessing, domain.StoredFiles{}, false, false, ""},
		{"completed, kept", domain.StatusCompleted, domain.StoredFiles{ExpiresAt: expires}, true, false, "2026-11-21T13:00:00Z"},
		{"completed before expiries existed", domain.StatusCompleted, domain.StoredFiles{}, true, false, ""},
		{"being removed", domain.StatusCompleted, domain.StoredFiles{ExpiresAt: expires, Removal: domain.RemovalRemoving}, false, false, "2026-11-21T13:00:00Z"},
		{"removed", domain.StatusCompleted, domain.StoredFiles{ExpiresAt: expires, Removal: domain.RemovalRemoved}, false, true, "2026-11-21T13:00:00Z"},
		{"expired", domain.StatusCompleted, domain.StoredFiles{ExpiresAt: now}, false, true, "2026-11-21T12:00:00Z"},
		{"failed, its files removed", domain.StatusFailed, domain.StoredFiles{Removal: domain.RemovalRemoved}, false, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := "https://media.example/generations/x/0.png"
			g := GenerationStatusAt(domain.Generation{UUID: "x", Status: tt.status, OutputURLs: []string{url},
				CreatedAt: now, Files: tt.files}, now)
			v := LongVideoStatusAt(domain.LongVideo{ID: "x", Status: tt.status, FinalVideoURL: url, CreatedAt: now,
				Files: tt.files}, domain.Studio{}, now)
			if got := slices.Equal(g.Output, []string{url}); got != tt.served || (!tt.served && g.Output == nil) {
				t.Errorf("generation output = %#v, want served %v (never null)", g.Output, tt.served)
			}
			if got := v.FinalVideoURL == url; got != tt.served {
				t.Errorf("final_video_url = %q, want served %v", v.FinalVideoURL, tt.served)
			}
			for _, f := range []OutputFiles{g.OutputFiles, v.OutputFiles} {
				if f.DataRemoved != tt.removed || f.OutputExpiresAt != tt.wantExpires {
					t.Errorf("files = %+v, want data_removed %v, output_expires_at %q", f, tt.removed, tt.wantExpires)
				}
			}
			raw, _ := json.Marshal(g)
			var fields map[string]any
			if err := json.Unmarshal(raw, &fields); err != nil {
				t.Fatal(err)
			}
			if _, ok := fields["data_removed"]; !ok {
				t.Errorf("the view %s has no data_removed", raw)
			}
			if _, ok := fields["output_expires_at"]; ok != (tt.wantExpires != "") {
				t.Errorf("the view %s: output_expires_at present %v, want %v", raw, ok, tt.wantExpires != "")
			}
		})
	}
}
