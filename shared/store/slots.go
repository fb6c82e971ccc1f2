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
	// by at, and acquired is false.
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

// SlotState is one provider's slots: who holds one and who waits since when.
// Both adapters decide with Decide, so they agree on the rules.
type SlotState struct {
	Holders map[string]time.Time
	Waiting map[string]time.Time
}

// Decide applies an acquire to the state and says whether holder has a slot.
func (st *SlotState) Decide(holder string, limit int, at time.Time) bool {
	if st.Holders == nil {
		st.Holders = map[string]time.Time{}
	}
	if st.Waiting == nil {
		st.Waiting = map[string]time.Time{}
	}
	if _, ok := st.Holders[holder]; ok {
		return true
	}
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
	return false
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
