package upstream

import (
	"errors"
	"fmt"
	"strings"
)

// atError names the upstream an error came from, so that a message can
// say which one failed without repeating the error itself.
type atError struct {
	Upstream string
	Err      error
}

func (e *atError) Error() string { return "upstream " + e.Upstream + ": " + e.Err.Error() }
func (e *atError) Unwrap() error { return e.Err }

// Public describes a failure to reach or use the upstream name (or the one
// an *atError in err names) for an API answer or a record's error: the
// provider's own refusal keeps its message, once; anything else says what
// happened in words, never an address, a URL or a Go error chain, which
// belong in the logs with err itself.
func Public(name string, err error) string {
	var at *atError
	if name == "" && errors.As(err, &at) {
		name = at.Upstream
	}
	who := "the upstream"
	if name != "" {
		who = "upstream " + name
	}
	var (
		ue      *Error
		unknown *UnknownOutcomeError
	)
	switch {
	case errors.As(err, &unknown):
		return who + "'s answer to the job was lost"
	case errors.As(err, &ue):
		answered := fmt.Sprintf("%s answered HTTP %d", who, ue.StatusCode)
		if ue.Message != "" {
			answered += ": " + ue.Message
		}
		if ue.Temporary() {
			return "upstream unreachable: " + strings.TrimPrefix(answered, "upstream ")
		}
		return answered
	case errors.Is(err, ErrMalformed):
		// The text after the sentinel is the protocol's own words.
		msg := err.Error()
		if i := strings.Index(msg, ErrMalformed.Error()); i >= 0 {
			msg = strings.TrimPrefix(msg[i+len(ErrMalformed.Error()):], ": ")
		}
		return strings.TrimSuffix(who+" sent an answer that does not follow its protocol: "+msg, ": ")
	case name == "":
		return "upstream unreachable"
	default:
		return "upstream unreachable: " + name
	}
}
