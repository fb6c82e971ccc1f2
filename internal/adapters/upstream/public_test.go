package upstream

import (
	"context"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"
)

// addressOrChain matches what must not reach a client: an address with a
// port, a dial error, or Go's error chain words.
var addressOrChain = regexp.MustCompile(`\d{1,3}(\.\d{1,3}){3}(:\d+)?|\[[0-9a-f:]+\](:\d+)?|dial tcp|connect:|connection refused|context deadline exceeded|Post "|Get "`)

// TestPublicNamesTheUpstreamNeverTheAddress: a failure to reach an
// upstream is told by its name; a provider's answer keeps its message; the
// dial error with its address stays in the error itself, for the logs.
func TestPublicNamesTheUpstreamNeverTheAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := &Replicate{BaseURL: "http://" + closed + "/v1", Token: "token", Tuning: Tuning{Attempts: 1}}
	_, dialErr := p.Submit(ctx, "owner/model", map[string]any{"prompt": "p"}, "")
	if dialErr == nil || !strings.Contains(dialErr.Error(), closed) {
		t.Fatalf("Submit to a closed port = %v, want a dial error naming %s", dialErr, closed)
	}
	tests := []struct {
		name, upstream string
		err            error
		want           string
	}{
		{"connection refused", "sim-replicate", dialErr, "upstream unreachable: sim-replicate"},
		{"the name from an AtError", "", &atError{Upstream: "sim-fal", Err: dialErr}, "upstream unreachable: sim-fal"},
		{"no name", "", dialErr, "upstream unreachable"},
		{"a 503", "r", &Error{Op: "get", StatusCode: 503, Message: "overloaded"}, "upstream unreachable: r answered HTTP 503: overloaded"},
		{"a 404", "r", &Error{Op: "get", StatusCode: 404, Message: "no such prediction"}, "upstream r answered HTTP 404: no such prediction"},
		{"an answer lost", "r", &UnknownOutcomeError{Cause: dialErr}, "upstream r's answer to the job was lost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Public(tt.upstream, tt.err)
			if got != tt.want {
				t.Errorf("Public = %q, want %q", got, tt.want)
			}
			if addressOrChain.MatchString(got) {
				t.Errorf("Public = %q shows an address or an error chain", got)
			}
		})
	}
}

// TestProblemMessageSaysEachInvalidFieldOnce: Replicate's problem+json
// lists the invalid fields in its detail and again in invalid_fields.
func TestProblemMessageSaysEachInvalidFieldOnce(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"detail repeats the fields", `{"title":"Input validation failed","detail":"prompt: the prompt asked to be refused","status":422,` +
			`"invalid_fields":[{"field":"prompt","description":"the prompt asked to be refused"}]}`, "prompt: the prompt asked to be refused"},
		{"fields beyond the detail", `{"title":"Input validation failed","detail":"seconds: Invalid type","status":422,` +
			`"invalid_fields":[{"field":"seconds","description":"Invalid type"},{"field":"fps","description":"too high"}]}`, "seconds: Invalid type; fps: too high"},
		{"fields only", `{"title":"Input validation failed","invalid_fields":[{"field":"fps","description":"too high"}]}`, "Input validation failed; fps: too high"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := problemMessage([]byte(tt.body)); got != tt.want {
				t.Errorf("ProblemMessage = %q, want %q", got, tt.want)
			}
		})
	}
}
