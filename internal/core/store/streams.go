package store

import (
	"context"
	"time"
)

// Streams caps the event streams an account has open at once, counted in
// the store so that the cap holds across Lambda instances (each open
// stream is an invocation of the stream function, on any instance). An
// open stream holds a lease until it closes, or until the lease's expiry:
// the stream's own end and a margin, so that the slot of a stream whose
// process died without closing it comes back then.
type Streams interface {
	// OpenStream takes a lease for stream among userID's, held until
	// expires, unless limit leases live at at (expiring after it) are held
	// already: then opened is false and nothing changes. Concurrent opens
	// never hold more than limit live leases.
	OpenStream(ctx context.Context, userID, stream string, limit int, at, expires time.Time) (opened bool, err error)
	// CloseStream gives stream's lease back; a repeat, or a lease already
	// expired, changes nothing.
	CloseStream(ctx context.Context, userID, stream string) error
}

// StreamLeases is one account's stream leases: each open stream's expiry.
// Both adapters decide with Open, so they agree on the rule.
type StreamLeases map[string]time.Time

// Open forgets the leases expired at at (an expiry at or before it), then
// adds stream's, until expires, when fewer than limit remain; it reports
// whether it did. A stream that holds a live lease keeps it (its expiry
// moved to expires).
func (l StreamLeases) Open(stream string, limit int, at, expires time.Time) bool {
	for id, until := range l {
		if !at.Before(until) {
			delete(l, id)
		}
	}
	if _, ok := l[stream]; !ok && len(l) >= limit {
		return false
	}
	l[stream] = expires
	return true
}

// Latest is the latest expiry of the leases (zero for none): when the
// last of them lapses.
func (l StreamLeases) Latest() time.Time {
	var last time.Time
	for _, until := range l {
		if until.After(last) {
			last = until
		}
	}
	return last
}
