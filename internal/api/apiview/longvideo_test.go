package apiview

import (
	"reflect"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

func TestLongVideoStatusShowsItsRevisionAndRunningRegenerate(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name         string
		revision     int
		regenerating *domain.Regeneration
		want         int
		wantRegen    *Regenerating
	}{
		{"a record stored before revisions", 0, nil, 1, nil},
		{"a first render", 1, nil, 1, nil},
		{"a regenerate running", 2, &domain.Regeneration{SceneNumber: 3, Revision: 3}, 2, &Regenerating{SceneNumber: 3, Revision: 3, Status: "processing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := LongVideoStatusAt(domain.LongVideo{ID: "x", Status: domain.StatusCompleted, FinalVideoURL: "https://cdn.example/r.mp4",
				CreatedAt: now, Revision: tt.revision, Regenerating: tt.regenerating}, domain.Studio{}, now)
			if v.Revision != tt.want || !reflect.DeepEqual(v.Regenerating, tt.wantRegen) || v.FinalVideoURL == "" || v.Status != "completed" {
				t.Errorf("view = revision %d, regenerating %+v, %s with %q; want revision %d, regenerating %+v, completed with its video",
					v.Revision, v.Regenerating, v.Status, v.FinalVideoURL, tt.want, tt.wantRegen)
			}
		})
	}
}
