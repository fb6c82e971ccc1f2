package store

import (
	"context"
	"time"
)

// Streams caps the event streams an account has open at once, counted in
// the store so that the cap holds across Lambda instances (each open
// stream is an invocation of the stream function, on any instance). A
// lease is the record a stream follows (its kind and id, the stream
// argument), held by one stream at a time (its owner, a token of that
// stream): a Lambda function is not told that its client went away, so
// the client that resumes a dropped stream takes its lease over rather
// than wait for it. A lease lasts until its owner closes it, or until its
// expiry: the stream's own end and a margin, so that the slot of a
// stream whose process died without closing it comes back then.
type Streams interface {
	// OpenStream takes the lease of stream among userID's for owner, held
	// until expires, unless limit leases live at at (expiring after it)
	// are held already: then opened is false and nothing changes. A live
	// lease of stream is taken over: owner becomes its owner, expires its
	// expiry, and it still counts once. Concurrent opens never hold more
	// than limit live leases.
	OpenStream(ctx context.Context, userID, stream, owner string, limit int, at, expires time.Time) (opened bool, err error)
	// HoldsStream reports whether owner still holds stream's lease: false
	// once another stream took it over, or it was closed.
	HoldsStream(ctx context.Context, userID, stream, owner string) (bool, error)
	// CloseStream gives stream's lease back if owner still holds it; a
	// lease taken over, closed or expired already changes nothing.
	CloseStream(ctx context.Context, userID, stream, owner string) error
}

// StreamLease is one stream lease: who holds it, and until when.
type StreamLease struct {
	Owner   string
	Expires time.Time
}

// StreamLeases is one account's stream leases, by the record each
// follows. Both adapters decide with its methods, so they agree on the
// rule.
type StreamLeases map[string]StreamLease

// Open forgets the leases expired at at (an expiry at or before it), then
// gives stream's to owner, until expires, when stream holds a live lease
// already (taken over) or fewer than limit remain; it reports whether it
// did.
func (l StreamLeases) Open(stream, owner string, limit int, at, expires time.Time) bool {
	for id, lease := range l {
		if !at.Before(lease.Expires) {
			delete(l, id)
		}
	}
	if _, ok := l[stream]; !ok && len(l) >= limit {
		return false
	}
	l[stream] = StreamLease{Owner: owner, Expires: expires}
	return true
}

// Close removes stream's lease if owner holds it, and reports whether it
// did.
func (l StreamLeases) Close(stream, owner string) bool {
	if lease, ok := l[stream]; ok && lease.Owner == owner {
		delete(l, stream)
		return true
	}
	return false
}

// Holds reports whether owner holds stream's lease.
func (l StreamLeases) Holds(stream, owner string) bool {
	lease, ok := l[stream]
	return ok && lease.Owner == owner
}

// Latest is the latest expiry of the leases (zero for none): when the
// last of them lapses.
func (l StreamLeases) Latest() time.Time {
	var last time.Time
	for _, lease := range l {
		if lease.Expires.After(last) {
			last = lease.Expires
		}
	}
	return last
}
