package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

func newGeneration(t *testing.T, s store.Store, userID, version string, status domain.Status, created time.Time) domain.Generation {
	t.Helper()
	g := &domain.Generation{UUID: uuid.NewString(), UserID: userID, Model: "provider-x", ModelVersion: version,
		Kind: domain.MediaImage, Input: []byte(`{"prompt":"p"}`), ImageCount: 1, Status: domain.StatusProcessing,
		CreditsUsed: credits("1.00"), CreatedAt: created, UpdatedAt: created, Deadline: created.Add(time.Hour)}
	if err := s.CreateGeneration(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	if status != domain.StatusProcessing {
		if err := s.FinishGeneration(context.Background(), g.UUID, domain.Outcome{Status: status}, created); err != nil {
			t.Fatal(err)
		}
		g.Status = status
	}
	return *g
}

func testGenerations(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := newAccount(t, s, domain.PlanFree, "0")
	input := json.RawMessage(`{"prompt":"a red fox","seconds":"4","aspect_ratio":"landscape"}`)
	g1 := &domain.Generation{UUID: uuid.NewString(), UserID: id, Model: "provider-b", ModelVersion: "beta-2",
		Kind: domain.MediaVideo, Input: input, ImageCount: 1, Status: domain.StatusProcessing,
		CreditsUsed: credits("40.00"), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(30 * time.Minute)}
	if err := s.CreateGeneration(ctx, g1); err != nil {
		t.Fatal(err)
	}
	g2 := *g1
	g2.UUID, g2.ID = uuid.NewString(), 0
	if err := s.CreateGeneration(ctx, &g2); err != nil {
		t.Fatal(err)
	}
	if g1.ID != 1 || g2.ID != 2 {
		t.Errorf("ids %d then %d, want the account's 1 and 2", g1.ID, g2.ID)
	}
	dup := *g1
	if err := s.CreateGeneration(ctx, &dup); !errors.Is(err, domain.ErrAlreadyExists) {
		t.Errorf("CreateGeneration with a taken uuid = %v, want ErrAlreadyExists", err)
	}
	got, err := s.GetGeneration(ctx, g1.UUID)
	if err != nil {
		t.Fatal(err)
	}
	byID, err := s.GetGenerationByID(ctx, id, g1.ID)
	if err != nil || byID.UUID != g1.UUID {
		t.Fatalf("GetGenerationByID(%d) = %s, %v", g1.ID, byID.UUID, err)
	}
	var in map[string]any
	if err := json.Unmarshal(got.Input, &in); err != nil || in["prompt"] != "a red fox" {
		t.Errorf("input = %s, want the stored input", got.Input)
	}
	if got.ID != g1.ID || got.UserID != id || got.Model != "provider-b" || got.ModelVersion != "beta-2" ||
		got.Kind != domain.MediaVideo || got.ImageCount != 1 || got.Status != domain.StatusProcessing ||
		!got.CreditsUsed.Equal(credits("40")) || !got.CreatedAt.Equal(now) || !got.Deadline.Equal(g1.Deadline) ||
		len(got.OutputURLs) != 0 || got.UpstreamID != "" || got.Error != "" {
		t.Errorf("stored generation = %+v, want %+v", got, g1)
	}
	for _, missing := range []func() error{
		func() error { _, err := s.GetGeneration(ctx, uuid.NewString()); return err },
		func() error { _, err := s.GetGenerationByID(ctx, id, 1<<40); return err },
		func() error {
			return s.SetUpstreamJobs(ctx, uuid.NewString(), domain.UpstreamRun{Jobs: []domain.UpstreamJob{{ID: "x"}}}, now)
		},
		func() error {
			return s.FinishGeneration(ctx, uuid.NewString(), domain.Outcome{Status: domain.StatusFailed}, now)
		},
	} {
		if err := missing(); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("operation on a missing generation = %v, want ErrNotFound", err)
		}
	}

	later := now.Add(3 * time.Second)
	if err := s.SetUpstreamJobs(ctx, g1.UUID, domain.UpstreamRun{Upstream: "u", Model: "o/m", Jobs: []domain.UpstreamJob{{ID: "up-123"}}}, later); err != nil {
		t.Fatal(err)
	}
	urls := []string{"https://cdn.example/a.mp4"}
	if err := s.FinishGeneration(ctx, g1.UUID, domain.Outcome{Status: domain.StatusCompleted, OutputURLs: urls}, later); err != nil {
		t.Fatal(err)
	}
	err = s.FinishGeneration(ctx, g1.UUID, domain.Outcome{Status: domain.StatusFailed, Error: "late"}, later)
	if !errors.Is(err, domain.ErrConflict) {
		t.Errorf("second FinishGeneration = %v, want ErrConflict", err)
	}
	if err := s.SetUpstreamJobs(ctx, g1.UUID, domain.UpstreamRun{Jobs: []domain.UpstreamJob{{ID: "up-other"}}}, later); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("SetUpstreamJobs after finish = %v, want ErrConflict", err)
	}
	got, _ = s.GetGeneration(ctx, g1.UUID)
	if got.Status != domain.StatusCompleted || got.UpstreamID != "up-123" || len(got.OutputURLs) != 1 ||
		got.OutputURLs[0] != urls[0] || got.Error != "" || !got.UpdatedAt.Equal(later) {
		t.Errorf("finished generation = %+v", got)
	}
	if err := s.FinishGeneration(ctx, g2.UUID, domain.Outcome{Status: domain.StatusFailed, Error: "upstream said no"}, later); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetGeneration(ctx, g2.UUID); got.Status != domain.StatusFailed || got.Error != "upstream said no" {
		t.Errorf("failed generation = %s %q", got.Status, got.Error)
	}
}

// longInput is a request's input of about 30 KB: a prompt near the longest
// a variant takes.
func longInput() json.RawMessage {
	b, _ := json.Marshal(map[string]string{"prompt": strings.Repeat("a boat on a long river, ", 1200), "aspect_ratio": "16:9"})
	return b
}

// testLongInputRoundTrips: a generation's input comes back whole, however
// long, from every read, after every write of the record.
func testLongInputRoundTrips(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanPro, "0")
	input := longInput()
	g := &domain.Generation{UUID: uuid.NewString(), UserID: user, Model: "provider-a", ModelVersion: "zeta-pro",
		Kind: domain.MediaImage, Input: input, ImageCount: 1, Status: domain.StatusProcessing,
		CreditsUsed: credits("3.00"), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour)}
	if err := s.CreateGeneration(ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateGeneration(ctx, g); !errors.Is(err, domain.ErrAlreadyExists) {
		t.Errorf("CreateGeneration with a taken uuid = %v, want ErrAlreadyExists", err)
	}
	check := func(when string) {
		t.Helper()
		got, err := s.GetGeneration(ctx, g.UUID)
		if err != nil || string(got.Input) != string(input) {
			t.Errorf("%s: GetGeneration input of %d bytes, %v; want the %d stored", when, len(got.Input), err, len(input))
		}
		if got, err := s.GetGenerationByID(ctx, user, g.ID); err != nil || string(got.Input) != string(input) {
			t.Errorf("%s: GetGenerationByID input of %d bytes, %v", when, len(got.Input), err)
		}
		page, err := s.ListGenerations(ctx, store.ListQuery{UserID: user, Limit: 5})
		if err != nil || len(page.Items) != 1 || page.Items[0].UUID != g.UUID || page.Items[0].Input != nil {
			t.Errorf("%s: ListGenerations = %d items, %v; want the generation without its input, which the list does not show", when, len(page.Items), err)
		}
	}
	check("created")
	run := domain.UpstreamRun{Upstream: "u", Model: "o/m", Jobs: []domain.UpstreamJob{{ID: "up-long"}}}
	if err := s.SetUpstreamJobs(ctx, g.UUID, run, now); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ClaimPoll(ctx, g.UUID, 0, now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishGeneration(ctx, g.UUID, domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{"https://cdn.example/l.png"}}, now); err != nil {
		t.Fatal(err)
	}
	check("completed")
}

// testInputObjectIsKept: a generation whose whole input is an object of
// the bucket keeps the object's key and its elided input, from every
// read; the list carries neither input, short or long.
func testInputObjectIsKept(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanPro, "0")
	id := uuid.NewString()
	key := "inputs/" + id + "/input.json"
	elided := json.RawMessage(`{"prompt":"a lighthouse","image_input":["data:image/png;base64,… (5333336 characters, kept in ` + key + `)"]}`)
	g := &domain.Generation{UUID: id, UserID: user, Model: "provider-a", ModelVersion: "zeta-pro",
		Kind: domain.MediaImage, Input: elided, InputObject: key, ImageCount: 1, Status: domain.StatusProcessing,
		CreditsUsed: credits("3.00"), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour)}
	if err := s.CreateGeneration(ctx, g); err != nil {
		t.Fatal(err)
	}
	short := newGeneration(t, s, user, "zeta", domain.StatusProcessing, now.Add(time.Second))
	for name, read := range map[string]func() (domain.Generation, error){
		"GetGeneration":     func() (domain.Generation, error) { return s.GetGeneration(ctx, id) },
		"GetGenerationByID": func() (domain.Generation, error) { return s.GetGenerationByID(ctx, user, g.ID) },
	} {
		got, err := read()
		if err != nil || got.InputObject != key || string(got.Input) != string(elided) {
			t.Errorf("%s = input object %q, input %s, %v; want %q and the elided input", name, got.InputObject, got.Input, err, key)
		}
	}
	if got, err := s.GetGeneration(ctx, short.UUID); err != nil || got.InputObject != "" {
		t.Errorf("a generation with its whole input has input object %q, %v; want none", got.InputObject, err)
	}
	page, err := s.ListGenerations(ctx, store.ListQuery{UserID: user, Limit: 5})
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("ListGenerations = %d items, %v; want 2", len(page.Items), err)
	}
	for _, it := range page.Items {
		if it.Input != nil {
			t.Errorf("listed %s with an input of %d bytes; the list shows none", it.UUID, len(it.Input))
		}
	}
}

// testGenerationIDsPerAccount: the integer id counts each account's own
// generations, so it says nothing about other accounts, and finding one by
// it never crosses accounts.
func testGenerationIDsPerAccount(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := newAccount(t, s, domain.PlanPro, "0"), newAccount(t, s, domain.PlanPro, "0")
	newImage := func(userID string) *domain.Generation {
		return &domain.Generation{UUID: uuid.NewString(), UserID: userID, Model: "provider-a", ModelVersion: "zeta",
			Kind: domain.MediaImage, Input: json.RawMessage(`{"prompt":"a"}`), ImageCount: 1, Status: domain.StatusProcessing,
			CreditsUsed: credits("5.07"), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(10 * time.Minute)}
	}
	create := func(userID string) *domain.Generation {
		t.Helper()
		g := newImage(userID)
		if err := s.CreateGeneration(ctx, g); err != nil {
			t.Fatalf("CreateGeneration: %v", err)
		}
		return g
	}
	a1, b1, a2 := create(a), create(b), create(a)
	if a1.ID != 1 || b1.ID != 1 || a2.ID != 2 {
		t.Errorf("ids: a's %d and %d, b's %d; want 1 and 2, and 1", a1.ID, a2.ID, b1.ID)
	}
	for _, tt := range []struct {
		user string
		id   int64
		want string
	}{{a, 1, a1.UUID}, {a, 2, a2.UUID}, {b, 1, b1.UUID}} {
		if g, err := s.GetGenerationByID(ctx, tt.user, tt.id); err != nil || g.UUID != tt.want || g.ID != tt.id {
			t.Errorf("GetGenerationByID(%s, %d) = %s (id %d), %v; want %s", tt.user, tt.id, g.UUID, g.ID, err, tt.want)
		}
	}
	if _, err := s.GetGenerationByID(ctx, b, 2); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("b's generation 2 (only a has one) = %v, want ErrNotFound", err)
	}
	// Made at once, an account's generations still take distinct numbers.
	c := newAccount(t, s, domain.PlanPro, "0")
	const n = 20
	ids := make([]int64, n)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := newImage(c)
			if err := s.CreateGeneration(ctx, g); err != nil {
				t.Errorf("CreateGeneration: %v", err)
			}
			ids[i] = g.ID
		}()
	}
	wg.Wait()
	slices.Sort(ids)
	for i, id := range ids {
		if id != int64(i+1) {
			t.Fatalf("concurrent ids %v, want 1 to %d once each", ids, n)
		}
	}
}

func testListGenerations(t *testing.T, s store.Store) {
	ctx := context.Background()
	user, other := newAccount(t, s, domain.PlanFree, "0"), newAccount(t, s, domain.PlanFree, "0")
	var newestFirst []string
	completedZeta := map[string]bool{}
	for i := 0; i < 23; i++ {
		status, version := domain.StatusProcessing, "zeta"
		if i%3 == 0 {
			status = domain.StatusCompleted
		}
		if i%2 == 0 {
			version = "zeta-pro"
		}
		// Two records share each creation time, so ties must page right too.
		g := newGeneration(t, s, user, version, status, now.Add(time.Duration(i/2)*time.Second))
		newestFirst = append([]string{g.UUID}, newestFirst...)
		if status == domain.StatusCompleted && version == "zeta-pro" {
			completedZeta[g.UUID] = true
		}
	}
	newGeneration(t, s, other, "zeta", domain.StatusProcessing, now)

	list := func(q store.ListQuery) func(string) (store.Page[domain.Generation], error) {
		return func(cursor string) (store.Page[domain.Generation], error) {
			q.Cursor = cursor
			return s.ListGenerations(ctx, q)
		}
	}
	id := func(g domain.Generation) string { return g.UUID }
	got := pageAll(t, 5, list(store.ListQuery{UserID: user, Limit: 5}), id)
	if len(got) != len(newestFirst) {
		t.Fatalf("listed %d generations, want %d", len(got), len(newestFirst))
	}
	seen := map[string]bool{}
	all, err := s.ListGenerations(ctx, store.ListQuery{UserID: user, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range all.Items {
		if seen[g.UUID] {
			t.Fatalf("generation %s listed twice", g.UUID)
		}
		seen[g.UUID] = true
		if g.UserID != user {
			t.Fatalf("listed another account's generation")
		}
		if i > 0 && g.CreatedAt.After(all.Items[i-1].CreatedAt) {
			t.Fatalf("item %d is newer than item %d: not newest first", i, i-1)
		}
	}
	if !reflect.DeepEqual(got, idsOf(all.Items, id)) {
		t.Errorf("paging by 5 gave another order than one page:\n%v\n%v", got, idsOf(all.Items, id))
	}
	if all.Next != "" {
		t.Errorf("one page holding everything has next cursor %q", all.Next)
	}
	filtered := pageAll(t, 2, list(store.ListQuery{UserID: user, Limit: 2, Status: domain.StatusCompleted, Model: "zeta-pro"}), id)
	if len(filtered) != len(completedZeta) {
		t.Errorf("status+model filter listed %d, want %d", len(filtered), len(completedZeta))
	}
	for _, u := range filtered {
		if !completedZeta[u] {
			t.Errorf("filter listed %s, which is not a completed zeta-pro", u)
		}
	}
	byModel := pageAll(t, 50, list(store.ListQuery{UserID: user, Limit: 50, Model: "provider-x"}), id)
	if len(byModel) != 23 {
		t.Errorf("model filter on the model name listed %d, want 23", len(byModel))
	}
	for _, bad := range []string{"not-a-cursor", "e30", "!!"} {
		if _, err := s.ListGenerations(ctx, store.ListQuery{UserID: user, Limit: 5, Cursor: bad}); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("cursor %q: %v, want ErrInvalid", bad, err)
		}
	}
}

func testUpstreamIDOnce(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanFree, "0")
	g := newGeneration(t, s, user, "zeta", domain.StatusProcessing, now)
	run := domain.UpstreamRun{Upstream: "fal-main", Model: "fal-ai/zeta/text", Jobs: []domain.UpstreamJob{
		{ID: "job-1", StatusURL: "https://q.example/a/requests/job-1/status", ResponseURL: "https://q.example/a/requests/job-1",
			CancelURL: "https://q.example/a/requests/job-1/cancel"}, {ID: "job-1b"}}}
	if err := s.SetUpstreamJobs(ctx, g.UUID, run, now); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUpstreamJobs(ctx, g.UUID, run, now); err != nil {
		t.Errorf("the same job again = %v, want nil", err)
	}
	other := run
	other.Jobs = []domain.UpstreamJob{{ID: "job-2"}}
	if err := s.SetUpstreamJobs(ctx, g.UUID, other, now); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("a second job = %v, want ErrConflict", err)
	}
	got, _ := s.GetGeneration(ctx, g.UUID)
	if got.UpstreamID != "job-1" || got.Upstream != run.Upstream || got.UpstreamModel != run.Model ||
		!reflect.DeepEqual(got.UpstreamJobs, run.Jobs) {
		t.Errorf("upstream run = %q %q %q %+v, want %+v kept", got.UpstreamID, got.Upstream, got.UpstreamModel, got.UpstreamJobs, run)
	}
}

// The provider's progress figure only grows, and stays as it was once the
// generation is final.
func testGenerationProgressOnlyGrows(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanFree, "0")
	g := newGeneration(t, s, user, "zeta", domain.StatusProcessing, now)
	for _, step := range []struct {
		set, want int
	}{{45, 45}, {30, 45}, {80, 80}, {150, 100}} {
		if err := s.SetGenerationProgress(ctx, g.UUID, step.set); err != nil {
			t.Fatalf("SetGenerationProgress(%d) = %v", step.set, err)
		}
		if got, _ := s.GetGeneration(ctx, g.UUID); got.Progress != step.want {
			t.Errorf("after setting %d the progress reads %d, want %d", step.set, got.Progress, step.want)
		}
	}
	done := newGeneration(t, s, user, "zeta", domain.StatusCompleted, now)
	if err := s.SetGenerationProgress(ctx, done.UUID, 50); err != nil {
		t.Errorf("SetGenerationProgress on a final generation = %v, want nil (left alone)", err)
	}
	if got, _ := s.GetGeneration(ctx, done.UUID); got.Progress != 0 {
		t.Errorf("a final generation's progress became %d", got.Progress)
	}
	if err := s.SetGenerationProgress(ctx, uuid.NewString(), 50); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("SetGenerationProgress on a missing generation = %v, want ErrNotFound", err)
	}
}

// The caller's deadline (deadline_seconds) is kept with the record; a
// record without one reads none.
func testGenerationCancelAtIsKept(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanFree, "0")
	g := &domain.Generation{UUID: uuid.NewString(), UserID: user, Model: "provider-x", ModelVersion: "zeta",
		Kind: domain.MediaImage, Input: []byte(`{"prompt":"p"}`), ImageCount: 1, Status: domain.StatusProcessing,
		CreditsUsed: credits("1.00"), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour), CancelAt: now.Add(90 * time.Second)}
	if err := s.CreateGeneration(ctx, g); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetGeneration(ctx, g.UUID); err != nil || !got.CancelAt.Equal(g.CancelAt) {
		t.Errorf("CancelAt reads %v (%v), want %v", got.CancelAt, err, g.CancelAt)
	}
	plain := newGeneration(t, s, user, "zeta", domain.StatusProcessing, now)
	if got, _ := s.GetGeneration(ctx, plain.UUID); !got.CancelAt.IsZero() {
		t.Errorf("a generation without a deadline reads CancelAt %v", got.CancelAt)
	}
}
