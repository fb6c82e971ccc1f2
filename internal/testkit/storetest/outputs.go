package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// recordKind is a record type whose stored files the suite follows: how to
// make one, finish it, read its files back and move their removal.
type recordKind struct {
	name   string
	create func(t *testing.T, s store.Store, user string) string
	finish func(s store.Store, id string, o domain.Outcome) error
	files  func(s store.Store, id string) (domain.StoredFiles, error)
	// listed is the record as the account's list shows it.
	listed    func(s store.Store, user, id string) (domain.StoredFiles, error)
	setRemove func(s store.Store, id string, r domain.Removal) error
}

var recordKinds = []recordKind{
	{
		name: "generation",
		create: func(t *testing.T, s store.Store, user string) string {
			return newGeneration(t, s, user, "v1", domain.StatusProcessing, now).UUID
		},
		finish: func(s store.Store, id string, o domain.Outcome) error {
			return s.FinishGeneration(context.Background(), id, o, now.Add(time.Minute))
		},
		files: func(s store.Store, id string) (domain.StoredFiles, error) {
			g, err := s.GetGeneration(context.Background(), id)
			return g.Files, err
		},
		listed: func(s store.Store, user, id string) (domain.StoredFiles, error) {
			p, err := s.ListGenerations(context.Background(), store.ListQuery{UserID: user, Limit: 10})
			for _, g := range p.Items {
				if g.UUID == id {
					return g.Files, err
				}
			}
			return domain.StoredFiles{}, errors.Join(err, domain.ErrNotFound)
		},
		setRemove: func(s store.Store, id string, r domain.Removal) error {
			return s.SetGenerationRemoval(context.Background(), id, r, now.Add(time.Hour))
		},
	},
	{
		name: "long video",
		create: func(t *testing.T, s store.Store, user string) string {
			return newLongVideo(t, s, user, "beta-2", now, domain.Webhook{}).ID
		},
		finish: func(s store.Store, id string, o domain.Outcome) error {
			return s.FinishLongVideo(context.Background(), id, o, now.Add(time.Minute))
		},
		files: func(s store.Store, id string) (domain.StoredFiles, error) {
			v, err := s.GetLongVideo(context.Background(), id)
			return v.Files, err
		},
		listed: func(s store.Store, user, id string) (domain.StoredFiles, error) {
			p, err := s.ListLongVideos(context.Background(), store.ListQuery{UserID: user, Limit: 10})
			for _, v := range p.Items {
				if v.ID == id {
					return v.Files, err
				}
			}
			return domain.StoredFiles{}, errors.Join(err, domain.ErrNotFound)
		},
		setRemove: func(s store.Store, id string, r domain.Removal) error {
			return s.SetLongVideoRemoval(context.Background(), id, r, now.Add(time.Hour))
		},
	},
}

// testOutputExpiry: a completed record keeps when its outputs expire, in
// its own read and in the list; another outcome has no expiry.
func testOutputExpiry(t *testing.T, s store.Store) {
	for _, k := range recordKinds {
		t.Run(k.name, func(t *testing.T) {
			user := newAccount(t, s, domain.PlanFree, "0")
			done, failed := k.create(t, s, user), k.create(t, s, user)
			expires := now.AddDate(0, 0, domain.DefaultRetentionDays)
			if err := k.finish(s, done, domain.Outcome{Status: domain.StatusCompleted,
				OutputURLs: []string{"https://cdn.example/x.mp4"}, OutputExpiresAt: expires}); err != nil {
				t.Fatal(err)
			}
			if err := k.finish(s, failed, domain.Outcome{Status: domain.StatusFailed, Error: "no"}); err != nil {
				t.Fatal(err)
			}
			for _, read := range []func() (domain.StoredFiles, error){
				func() (domain.StoredFiles, error) { return k.files(s, done) },
				func() (domain.StoredFiles, error) { return k.listed(s, user, done) },
			} {
				f, err := read()
				if err != nil || !f.ExpiresAt.Equal(expires) || f.Removal != domain.RemovalNone {
					t.Errorf("completed %s's files = %+v, %v; want expiring at %s, not removed", k.name, f, err, expires)
				}
			}
			if f, err := k.files(s, failed); err != nil || !f.ExpiresAt.IsZero() || f.Removal != domain.RemovalNone {
				t.Errorf("failed %s's files = %+v, %v; want no expiry", k.name, f, err)
			}
		})
	}
}

// removalStep moves a record's removal to `to`, expecting the error want
// and the state after.
type removalStep struct {
	name  string
	to    domain.Removal
	want  error
	after domain.Removal
}

// testOutputRemoval: the removal only moves forward (none, removing,
// removed), never while the record is processing, and removed is reached
// only through removing.
func testOutputRemoval(t *testing.T, s store.Store) {
	for _, k := range recordKinds {
		t.Run(k.name, func(t *testing.T) {
			user := newAccount(t, s, domain.PlanFree, "0")
			id := k.create(t, s, user)
			want := func(removal domain.Removal) {
				t.Helper()
				for _, read := range []func() (domain.StoredFiles, error){
					func() (domain.StoredFiles, error) { return k.files(s, id) },
					func() (domain.StoredFiles, error) { return k.listed(s, user, id) },
				} {
					if f, err := read(); err != nil || f.Removal != removal {
						t.Errorf("removal = %q, %v; want %q", f.Removal, err, removal)
					}
				}
			}
			run := func(steps []removalStep) {
				t.Helper()
				for _, st := range steps {
					err := k.setRemove(s, id, st.to)
					if (st.want == nil && err != nil) || (st.want != nil && !errors.Is(err, st.want)) {
						t.Errorf("%s: %v, want %v", st.name, err, st.want)
					}
					want(st.after)
				}
			}
			run([]removalStep{
				{"removing while processing", domain.RemovalRemoving, domain.ErrConflict, domain.RemovalNone},
				{"removed while processing", domain.RemovalRemoved, domain.ErrConflict, domain.RemovalNone},
			})
			if err := k.finish(s, id, domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{"https://cdn.example/x.mp4"},
				OutputExpiresAt: now.AddDate(0, 0, 30)}); err != nil {
				t.Fatal(err)
			}
			run([]removalStep{
				{"removed before removing", domain.RemovalRemoved, domain.ErrConflict, domain.RemovalNone},
				{"another state", domain.Removal("gone"), domain.ErrInvalid, domain.RemovalNone},
				{"removing", domain.RemovalRemoving, nil, domain.RemovalRemoving},
				{"removing again (a retry)", domain.RemovalRemoving, nil, domain.RemovalRemoving},
				{"removed", domain.RemovalRemoved, nil, domain.RemovalRemoved},
				{"removed again", domain.RemovalRemoved, nil, domain.RemovalRemoved},
				{"removing after removed stays removed", domain.RemovalRemoving, nil, domain.RemovalRemoved},
			})
			if f, _ := k.files(s, id); f.ExpiresAt.IsZero() {
				t.Errorf("the removal lost the expiry: %+v", f)
			}
			missing := uuid.NewString()
			for _, r := range []domain.Removal{domain.RemovalRemoving, domain.RemovalRemoved} {
				if err := k.setRemove(s, missing, r); !errors.Is(err, domain.ErrNotFound) {
					t.Errorf("%s on a missing %s = %v, want ErrNotFound", r, k.name, err)
				}
			}
			if _, err := k.files(s, missing); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("a removal on a missing %s made one: %v", k.name, err)
			}
		})
	}
}

// testOutputRetention: an account keeps its retention, the default until
// set, read back whole and by authentication alike.
func testOutputRetention(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanPro, "0")
	if a, err := s.GetAccount(ctx, user); err != nil || a.OutputRetentionDays != 0 || a.RetentionDays() != domain.DefaultRetentionDays {
		t.Errorf("a new account's retention = %d (%d days), %v; want the default", a.OutputRetentionDays, a.RetentionDays(), err)
	}
	if err := s.SetOutputRetention(ctx, user, 7); err != nil {
		t.Fatal(err)
	}
	if a, err := s.GetAccount(ctx, user); err != nil || a.RetentionDays() != 7 {
		t.Errorf("after setting 7 days: %d, %v", a.RetentionDays(), err)
	}
	if err := s.SetOutputRetention(ctx, "user-missing-"+uuid.NewString(), 7); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("SetOutputRetention(missing) = %v, want ErrNotFound", err)
	}
	created := "user-" + uuid.NewString()
	if err := s.CreateAccount(ctx, domain.Account{UserID: created, Plan: domain.PlanFree, CreatedAt: now, OutputRetentionDays: 1}); err != nil {
		t.Fatal(err)
	}
	if a, err := s.GetAccount(ctx, created); err != nil || a.RetentionDays() != 1 {
		t.Errorf("an account created with 1 day: %d, %v", a.RetentionDays(), err)
	}
}

// testFinishingClaim: a record claimed as finishing can no longer be
// canceled, while completing or failing it still works; a cancel written
// first makes the claim a conflict; claiming again is harmless; and of a
// claim and a cancel racing, exactly one wins.
func testFinishingClaim(t *testing.T, s store.Store) {
	kinds := []struct {
		recordKind
		claim func(s store.Store, id string) error
	}{
		{recordKinds[0], func(s store.Store, id string) error {
			return s.ClaimGenerationFinish(context.Background(), id, now.Add(time.Second))
		}},
		{recordKinds[1], func(s store.Store, id string) error {
			return s.ClaimLongVideoFinish(context.Background(), id, now.Add(time.Second))
		}},
	}
	canceled := domain.Outcome{Status: domain.StatusCanceled, Error: "canceled by the caller"}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			user := newAccount(t, s, domain.PlanFree, "0")
			for _, end := range []domain.Outcome{
				{Status: domain.StatusCompleted, OutputURLs: []string{"https://cdn.example/x.mp4"}, OutputExpiresAt: now.AddDate(0, 0, 30)},
				{Status: domain.StatusFailed, Error: domain.TimedOutError},
			} {
				id := k.create(t, s, user)
				if f, err := k.files(s, id); err != nil || f.Finishing {
					t.Fatalf("a new %s's files = %+v, %v; want not finishing", k.name, f, err)
				}
				for i := 0; i < 2; i++ {
					if err := k.claim(s, id); err != nil {
						t.Fatalf("claim %d of a processing %s = %v", i+1, k.name, err)
					}
				}
				if f, err := k.files(s, id); err != nil || !f.Finishing {
					t.Errorf("claimed %s's files = %+v, %v; want finishing", k.name, f, err)
				}
				if f, err := k.listed(s, user, id); err != nil || !f.Finishing {
					t.Errorf("claimed %s as listed = %+v, %v; want finishing", k.name, f, err)
				}
				err := k.finish(s, id, canceled)
				if !errors.Is(err, domain.ErrFinishing) || !errors.Is(err, domain.ErrConflict) {
					t.Errorf("cancel of a finishing %s = %v, want ErrFinishing (a conflict)", k.name, err)
				}
				if err := k.finish(s, id, end); err != nil {
					t.Errorf("%s of a finishing %s = %v", end.Status, k.name, err)
				}
				if err := k.claim(s, id); !errors.Is(err, domain.ErrConflict) || errors.Is(err, domain.ErrFinishing) {
					t.Errorf("claim of a %s %s = %v, want a plain conflict", end.Status, k.name, err)
				}
			}
			id := k.create(t, s, user)
			if err := k.finish(s, id, canceled); err != nil {
				t.Fatal(err)
			}
			if err := k.claim(s, id); !errors.Is(err, domain.ErrConflict) {
				t.Errorf("claim of a canceled %s = %v, want ErrConflict", k.name, err)
			}
			if f, _ := k.files(s, id); f.Finishing {
				t.Errorf("the refused claim marked the canceled %s finishing", k.name)
			}
			if err := k.claim(s, uuid.NewString()); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("claim of a missing %s = %v, want ErrNotFound", k.name, err)
			}
			for round := 0; round < 8; round++ {
				id := k.create(t, s, user)
				errs := make(chan error, 2)
				go func() { errs <- k.claim(s, id) }()
				go func() { errs <- k.finish(s, id, canceled) }()
				e1, e2 := <-errs, <-errs
				if (e1 == nil) == (e2 == nil) {
					t.Fatalf("round %d: claim and cancel answered %v and %v; want exactly one to win", round, e1, e2)
				}
				f, err := k.files(s, id)
				status := domain.StatusProcessing
				if k.name == "generation" {
					g, _ := s.GetGeneration(context.Background(), id)
					status = g.Status
				} else {
					v, _ := s.GetLongVideo(context.Background(), id)
					status = v.Status
				}
				if err != nil || f.Finishing == (status == domain.StatusCanceled) {
					t.Errorf("round %d: after the race the %s is %s with finishing %v (%v)", round, k.name, status, f.Finishing, err)
				}
			}
		})
	}
}
