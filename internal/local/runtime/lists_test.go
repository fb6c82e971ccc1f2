package runtime_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
)

func TestListsPageThrough250RecordsWithoutDuplicatesOrGaps(t *testing.T) {
	rt := start(t, runtime.Config{})
	owner := newAccount(t, rt, domain.PlanEnterprise, 10)
	other := newAccount(t, rt, domain.PlanEnterprise, 10)
	ctx := context.Background()
	base := time.Now().Add(-time.Hour)
	want := map[string]bool{}
	failed := 0
	for i := 0; i < 250; i++ {
		g := &domain.Generation{UUID: uuid.NewString(), UserID: owner.UserID, Model: "provider-a", ModelVersion: "theta-4-fast",
			Kind: domain.MediaImage, Input: []byte(`{"prompt":"p"}`), ImageCount: 1, Status: domain.StatusProcessing,
			CreditsUsed: credits("1"), CreatedAt: base.Add(time.Duration(i/3) * time.Second), UpdatedAt: base, Deadline: base.Add(time.Hour)}
		if err := rt.Store.CreateGeneration(ctx, g); err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			if err := rt.Store.FinishGeneration(ctx, g.UUID, domain.Outcome{Status: domain.StatusFailed, Error: "x"}, base); err != nil {
				t.Fatal(err)
			}
			failed++
		}
		want[g.UUID] = true
	}
	call(t, rt, http.MethodPost, "/api/generations/generate", other.APIKey, imageBody("not yours"))

	page := func(query string) ([]string, []string) {
		var ids, created []string
		cursor := ""
		for pages := 0; pages < 100; pages++ {
			path := "/api/generations?" + query
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			a := call(t, rt, http.MethodGet, path, owner.APIKey, nil)
			if a.status != http.StatusOK {
				t.Fatalf("GET %s: HTTP %d %s", path, a.status, a.body)
			}
			data, _ := a.decoded["data"].([]any)
			for _, d := range data {
				m, _ := d.(map[string]any)
				ids = append(ids, m["id"].(string))
				created = append(created, m["created_at"].(string))
			}
			next, _ := a.decoded["next_cursor"].(string)
			if next == "" {
				if a.decoded["has_more"] != false {
					t.Errorf("last page has_more = %v", a.decoded["has_more"])
				}
				return ids, created
			}
			cursor = next
		}
		t.Fatal("the cursors never end")
		return nil, nil
	}
	ids, created := page("limit=7")
	seen := map[string]bool{}
	for i, id := range ids {
		if seen[id] {
			t.Fatalf("%s listed twice", id)
		}
		seen[id] = true
		if !want[id] {
			t.Fatalf("%s listed, which is not the caller's", id)
		}
		if i > 0 && created[i] > created[i-1] {
			t.Fatalf("item %d is newer than item %d", i, i-1)
		}
	}
	if len(ids) != 250 {
		t.Errorf("listed %d, want 250", len(ids))
	}
	if ids, _ := page("limit=100&status=failed&model=theta-4-fast"); len(ids) != failed {
		t.Errorf("failed filter listed %d, want %d", len(ids), failed)
	}
	for _, bad := range []string{"limit=0", "limit=101", "limit=x", "status=done", "cursor=nonsense", "sort=asc"} {
		if a := call(t, rt, http.MethodGet, "/api/generations?"+bad, owner.APIKey, malformed(nil)); a.status != http.StatusBadRequest {
			t.Errorf("?%s: HTTP %d, want 400", bad, a.status)
		}
	}
	videos := call(t, rt, http.MethodGet, "/api/long-story/videos?limit=5", owner.APIKey, nil)
	if data, _ := videos.decoded["data"].([]any); videos.status != http.StatusOK || len(data) != 0 || videos.decoded["has_more"] != false {
		t.Errorf("video list: HTTP %d %s; want an empty page", videos.status, videos.body)
	}
}
