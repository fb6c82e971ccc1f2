package media

import (
	"errors"
	"fmt"
)

// rejectedError is an output the service will not keep; it matches
// ErrRejected under errors.Is. Reason is fit for the record the client
// reads; Detail (a host or an address) is for the logs only.
type rejectedError struct{ Reason, Detail string }

func (e *rejectedError) Error() string {
	if e.Detail == "" {
		return ErrRejected.Error() + ": " + e.Reason
	}
	return ErrRejected.Error() + ": " + e.Reason + " (" + e.Detail + ")"
}

func (e *rejectedError) Is(target error) bool { return target == ErrRejected }

func rejected(reason, detail string) error { return &rejectedError{Reason: reason, Detail: detail} }

// statusError is an output whose host answered other than 200.
type statusError struct {
	File   string
	Status int
}

func (e *statusError) Error() string {
	return fmt.Sprintf("fetch output %s: HTTP %d", e.File, e.Status)
}

// PublicReason says why an output could not be kept, in words fit for the
// record a client reads: a rejection's reason or the status its host
// answered. It is "" for other failures (the connection, the bucket),
// whose errors may name addresses and belong in the logs.
func PublicReason(err error) string {
	var rej *rejectedError
	var st *statusError
	switch {
	case errors.As(err, &rej):
		return ErrRejected.Error() + ": " + rej.Reason
	case errors.As(err, &st):
		return fmt.Sprintf("its host answered HTTP %d", st.Status)
	}
	return ""
}
