package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/generation"
)

// preferHeader asks the generate route to wait for the job (RFC 7240).
const preferHeader = "Prefer"

// preferWait reads the wait preference of a Prefer header as Replicate
// does: "wait" is its longest wait (60 s) and "wait=N" is N seconds, N a
// whole number from 1 to 60; other preferences in the list are ignored
// (RFC 7240), and a wait outside that is a 400 before anything is held.
// No wait preference is zero: the answer does not wait.
func preferWait(value string) (time.Duration, error) {
	for _, pref := range strings.Split(value, ",") {
		// A preference's own parameters follow a ';' (RFC 7240 §2).
		token, _, _ := strings.Cut(pref, ";")
		name, n, hasValue := strings.Cut(strings.TrimSpace(token), "=")
		if !strings.EqualFold(strings.TrimSpace(name), "wait") {
			continue
		}
		if !hasValue {
			return generation.MaxWait, nil
		}
		n = strings.Trim(strings.TrimSpace(n), `"`)
		secs, err := strconv.Atoi(n)
		if err != nil || secs < 1 || time.Duration(secs)*time.Second > generation.MaxWait || strconv.Itoa(secs) != n {
			return 0, &Error{Status: http.StatusBadRequest, Code: "invalid_request",
				Message: "Prefer: wait=N takes N a whole number of seconds from 1 to 60, or is \"wait\" alone (60 s)"}
		}
		return time.Duration(secs) * time.Second, nil
	}
	return 0, nil
}
