package httpapi

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

// Prefer: wait is read as Replicate documents it: "wait" alone is 60 s,
// "wait=N" is N seconds for N from 1 to 60, and anything else under the
// wait name is a 400 before anything is held.
func TestPreferWait(t *testing.T) {
	cases := []struct {
		header string
		want   time.Duration
		bad    bool
	}{
		{"", 0, false},
		{"wait", 60 * time.Second, false},
		{"wait=5", 5 * time.Second, false},
		{"Wait = 60", 60 * time.Second, false},
		{"respond-async, wait=10", 10 * time.Second, false},
		{"return=minimal", 0, false},
		{"wait=1", time.Second, false},
		{"wait=0", 0, true},
		{"wait=61", 0, true},
		{"wait=-3", 0, true},
		{"wait=abc", 0, true},
		{"wait=2.5", 0, true},
		{"wait=", 0, true},
	}
	for _, c := range cases {
		t.Run(c.header, func(t *testing.T) {
			got, err := preferWait(c.header)
			var e *Error
			switch {
			case c.bad && (!errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Code != "invalid_request"):
				t.Errorf("preferWait(%q) = %v, %v; want a 400 invalid_request", c.header, got, err)
			case !c.bad && (err != nil || got != c.want):
				t.Errorf("preferWait(%q) = %v, %v; want %v", c.header, got, err, c.want)
			}
		})
	}
}
