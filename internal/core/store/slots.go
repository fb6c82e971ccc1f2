package store

import (
	"context"
	"time"
)

// Slots caps the jobs running at once at each upstream provider, counted in
// the store so that every Lambda instance sees the same count.
type Slots interface {
	// AcquireSlot takes one of provider's limit slots for holder. A holder
	// that has a slot keeps it. A new holder takes a free slot only when no
	// one waits; waiters take free slots in the order they started waiting.
	// A holder that gets none joins (or stays on) the wait list, ordered
	// by at, and acquired is false. at is the time of the ask: a slot held
	// for SlotHoldLimit, or a waiter that has not asked for
	// SlotWaiterTimeout, is gone (its work ended without releasing it) and
	// is taken off the count or the line by the asks that it blocks.
	AcquireSlot(ctx context.Context, provider, holder string, limit int, at time.Time) (acquired bool, err error)
	// ReleaseSlot frees holder's slot or takes it off the wait list; a
	// repeat changes nothing.
	ReleaseSlot(ctx context.Context, provider, holder string) error
	// SlotQueuePosition is holder's place (from 1) on provider's wait list,
	// 0 when it is not waiting.
	SlotQueuePosition(ctx context.Context, provider, holder string) (int, error)
	// SlotsInUse counts provider's slots taken.
	SlotsInUse(ctx context.Context, provider string) (int, error)
}

// Slots left behind by work that ended without releasing them (a poll chain
// lost, a release that failed) must not shrink an upstream's cap for good.
// Every path that ends work releases its slot; these bound what a missed
// release costs.
const (
	// SlotHoldLimit is the longest a slot is held: longer than any work
	// may run (a video generation's deadline, 30 minutes by default; a
	// long-form execution's 3,600 s), so only a slot whose work is over is
	// past it.
	SlotHoldLimit = 2 * time.Hour
	// SlotWaiterTimeout is how long a waiter keeps its place without
	// asking again. A live waiter asks far more often (a generation every
	// generation.SlotWait, a scene at each SlotsFullError retry, at most
	// every MaxDelaySeconds of its Retry); one whose work ended stops
	// asking, and after this long no longer holds the line.
	SlotWaiterTimeout = 5 * time.Minute
)

// SlotState is one provider's slots: who holds one since when, who waits
// since when, and when each waiter last asked. Both adapters decide with
// Decide, so they agree on the rules.
type SlotState struct {
	Holders map[string]time.Time
	Waiting map[string]time.Time
	Asked   map[string]time.Time `json:",omitempty"`
}

// Decide applies an acquire at time at to the state and says whether
// holder has a slot.
func (st *SlotState) Decide(holder string, limit int, at time.Time) bool {
	if st.Holders == nil {
		st.Holders = map[string]time.Time{}
	}
	if st.Waiting == nil {
		st.Waiting = map[string]time.Time{}
	}
	if st.Asked == nil {
		st.Asked = map[string]time.Time{}
	}
	if _, ok := st.Holders[holder]; ok {
		return true
	}
	st.dropGone(at)
	free := limit - len(st.Holders)
	since, waiting := st.Waiting[holder]
	if !waiting {
		since = at
	}
	// Waiters ahead of holder take the free slots first.
	if free > 0 && st.Ahead(holder, since) < free {
		delete(st.Waiting, holder)
		st.Holders[holder] = at
		return true
	}
	if !waiting {
		st.Waiting[holder] = at
	}
	st.Asked[holder] = at
	return false
}

// Release takes holder off the slots and the line.
func (st *SlotState) Release(holder string) {
	delete(st.Holders, holder)
	delete(st.Waiting, holder)
	delete(st.Asked, holder)
}

// dropGone forgets the holders past SlotHoldLimit and the waiters that
// have not asked for SlotWaiterTimeout (a waiter recorded before asks
// were, counts from now).
func (st *SlotState) dropGone(now time.Time) {
	for h, since := range st.Holders {
		if !now.Before(since.Add(SlotHoldLimit)) {
			delete(st.Holders, h)
		}
	}
	for h := range st.Waiting {
		asked, ok := st.Asked[h]
		if !ok {
			st.Asked[h] = now
			continue
		}
		if !now.Before(asked.Add(SlotWaiterTimeout)) {
			delete(st.Waiting, h)
			delete(st.Asked, h)
		}
	}
}

// Ahead counts the waiters (other than holder) waiting since before since.
func (st *SlotState) Ahead(holder string, since time.Time) int {
	n := 0
	for h, t := range st.Waiting {
		if h != holder && (t.Before(since) || (t.Equal(since) && h < holder)) {
			n++
		}
	}
	return n
}

// Position is holder's place on the wait list (from 1), 0 if not waiting.
func (st *SlotState) Position(holder string) int {
	since, ok := st.Waiting[holder]
	if !ok {
		return 0
	}
	return st.Ahead(holder, since) + 1
}
