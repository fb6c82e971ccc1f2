package domain

import (
	"fmt"
	"time"
)

// DefaultRetentionDays is how long a record's stored files are kept when
// its account sets no retention of its own: the output bucket's lifecycle
// rule deletes them then (template.yaml), and the local runtime does the
// same.
const DefaultRetentionDays = 30

// RetentionChoices are the retentions, in days, an account may keep its
// outputs for. Each shorter than the default has a lifecycle rule of its
// own, selected by the objects' RetentionTag; none is longer, because the
// default's rule covers every object and S3 applies the shortest rule
// that matches.
var RetentionChoices = []int{1, 7, DefaultRetentionDays}

// RetentionTag is the object tag that gives an object a retention other
// than the default ("1", "7"): the bucket's lifecycle rule for that value
// expires it.
const RetentionTag = "retention-days"

// CheckRetentionDays accepts a retention of RetentionChoices.
func CheckRetentionDays(days int) error {
	for _, d := range RetentionChoices {
		if d == days {
			return nil
		}
	}
	return fmt.Errorf("%w: a retention of %d days is not offered (allowed: %v)", ErrInvalid, days, RetentionChoices)
}

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
	// Finishing: the record's outputs are being written (claimed before
	// the first byte, while the record is still processing). A finishing
	// record ends completed (and is charged) or failed, never canceled,
	// so no output is ever written for work whose credits went back.
	Finishing bool
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
