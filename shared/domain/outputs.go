package domain

import "time"

// DefaultRetentionDays is how long a record's stored files are kept when
// its account sets no retention of its own: the output bucket's lifecycle
// rule deletes them then (template.yaml), and the local runtime does the
// same.
const DefaultRetentionDays = 30

// Removal is where the deletion of a record's stored files stands. It only
// moves forward: none, removing, removed.
type Removal string

const (
	// RemovalNone: the files are kept until their retention ends.
	RemovalNone Removal = ""
	// RemovalRemoving: a deletion began. The URLs are no longer handed
	// out, but files may remain until a deletion finishes (a retry of the
	// request does it).
	RemovalRemoving Removal = "removing"
	// RemovalRemoved: every file was deleted.
	RemovalRemoved Removal = "removed"
)

// StoredFiles is the life of a record's files in the bucket.
type StoredFiles struct {
	// ExpiresAt is when their retention ends: set when the record
	// completes with outputs, zero before and for work without outputs.
	ExpiresAt time.Time
	Removal   Removal
}

// Removed reports whether the files are gone at now: deleted on request,
// or past their retention, when the bucket's lifecycle rule deletes them
// without touching the record.
func (f StoredFiles) Removed(now time.Time) bool {
	return f.Removal == RemovalRemoved || f.expired(now)
}

// Served reports whether the outputs' URLs may be handed out at now: no
// deletion began and the retention has not ended, so they do not point at
// files that are, or are about to be, gone.
func (f StoredFiles) Served(now time.Time) bool {
	return f.Removal == RemovalNone && !f.expired(now)
}

func (f StoredFiles) expired(now time.Time) bool {
	return !f.ExpiresAt.IsZero() && !now.Before(f.ExpiresAt)
}

// RetentionEnd is when files completed at completedAt and kept for days
// stop being served.
func RetentionEnd(completedAt time.Time, days int) time.Time {
	return completedAt.UTC().AddDate(0, 0, days)
}
