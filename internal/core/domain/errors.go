// Package domain holds the service's core types and the typed errors that
// every layer checks with errors.Is/As. It imports no AWS package.
package domain

import (
	"errors"
	"fmt"

	"github.com/shopspring/decimal"
)

// Sentinel errors. Adapters wrap them with context; callers test with errors.Is.
var (
	ErrNotFound            = errors.New("not found")
	ErrAlreadyExists       = errors.New("already exists")
	ErrInsufficientCredits = errors.New("insufficient credits")
	// ErrConflict reports a state transition that is no longer possible,
	// such as finishing a generation that already finished.
	ErrConflict = errors.New("conflict")
	ErrInvalid  = errors.New("invalid argument")
	// ErrTaskGone is a workflow task token no task waits on any more: the
	// task ended, timed out or was retried with a new token.
	ErrTaskGone = errors.New("the workflow task no longer waits on this token")
	// ErrBusy is a write that other writes of the same records kept
	// conflicting with for its whole retry budget: nothing was written, and
	// the same request may succeed a moment later (503 with Retry-After).
	ErrBusy = errors.New("busy")
	// ErrAnswerTooLarge is an answer over MaxIdempotentAnswer given to a
	// store to keep.
	ErrAnswerTooLarge = errors.New("answer too large to keep")
	// ErrWebhookAttemptsFull is an attempt given to a record that lists
	// MaxWebhookAttempts already.
	ErrWebhookAttemptsFull = errors.New("the record lists as many webhook attempts as it keeps")
	// ErrFinishing is a cancel that came too late: the work's outputs are
	// being written (StoredFiles.Finishing), so it ends completed and is
	// charged, or fails. It is an ErrConflict too.
	ErrFinishing error = finishingError{}
)

type finishingError struct{}

func (finishingError) Error() string        { return "finishing" }
func (finishingError) Is(target error) bool { return target == ErrConflict }

// InsufficientCreditsError says how short an account was. It matches
// ErrInsufficientCredits under errors.Is.
type InsufficientCreditsError struct {
	Required  decimal.Decimal
	Available decimal.Decimal
}

func (e *InsufficientCreditsError) Error() string {
	return fmt.Sprintf("insufficient credits: %s required, %s available",
		e.Required.StringFixed(2), e.Available.StringFixed(2))
}

func (e *InsufficientCreditsError) Is(target error) bool { return target == ErrInsufficientCredits }

// RecordedWorkError is a create that failed after its work's record was
// written (and failed): the answer names the record, so that a client can
// match it in the list. It is transparent to errors.Is/As.
type RecordedWorkError struct {
	Kind WorkKind
	// ID is the generation's UUID or the long video's id.
	ID  string
	Err error
}

func (e *RecordedWorkError) Error() string { return e.Err.Error() }
func (e *RecordedWorkError) Unwrap() error { return e.Err }
