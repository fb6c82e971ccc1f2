package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/store"
)

// restartLister is what an adapter that the local runtime runs on has
// besides store.Store: the listing of the work in flight that the runtime's
// restart resumes (each adapter's restart.go). The Lambda functions never
// ask for it, so it is no part of store.Store.
type restartLister interface {
	ProcessingGenerations(ctx context.Context, limit int) ([]domain.Generation, error)
}

// listerOf is s's restart listing; an adapter without one is not one the
// local runtime can run on, and the test is skipped.
func listerOf(t *testing.T, s store.Store) restartLister {
	t.Helper()
	l, ok := s.(restartLister)
	if !ok {
		t.Skipf("%T lists no work in flight: the local runtime does not run on it", s)
	}
	return l
}

func testRestartListsGenerations(t *testing.T, s store.Store) {
	l := listerOf(t, s)
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanFree, "0")
	done := newGeneration(t, s, user, "zeta", domain.StatusCompleted, now)
	inFlight := newGeneration(t, s, user, "zeta", domain.StatusProcessing, now.Add(time.Second))
	processing, err := l.ProcessingGenerations(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var seenDone, seenInFlight bool
	for _, p := range processing {
		seenDone = seenDone || p.UUID == done.UUID
		seenInFlight = seenInFlight || p.UUID == inFlight.UUID
		if p.Status != domain.StatusProcessing {
			t.Errorf("ProcessingGenerations listed a %s generation", p.Status)
		}
	}
	if seenDone || !seenInFlight {
		t.Errorf("ProcessingGenerations saw completed %v, processing %v; want only the processing one", seenDone, seenInFlight)
	}
}
