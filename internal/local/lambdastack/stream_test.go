package lambdastack

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/local/simulator"
)

// The progress stream on the deployed shape: the HTTP API has no such
// route (API Gateway cannot stream; its 404), and the stream function's
// URL (AuthType NONE, RESPONSE_STREAM) serves it from the function's
// built bootstrap through aws-lambda-go's streaming answer: the current
// view at once, the canceled view after a cancel through the API, then
// the end. The function checks the key itself (no authorizer runs in
// front of a function URL), and the URL answers CORS as configured.
func TestTheProgressStreamIsServedByTheStreamFunctionURL(t *testing.T) {
	l := shared(t)
	base := l.FunctionURLs["EventStreamFunctionUrl"]
	if base == "" {
		t.Fatalf("the stack serves no EventStreamFunctionUrl (function URLs: %v)", l.FunctionURLs)
	}
	acct := newAccount(t, l, 100)
	id, _ := generate(t, l, acct.APIKey, imageRequest("a lantern by the sea "+simulator.MarkerHold))
	path := "api/generations/" + id + "/events"

	if status, _ := callAs(t, l, acct.APIKey, http.MethodGet, "/"+path, ""); status != http.StatusNotFound {
		t.Errorf("the HTTP API answered the stream's path %d, want API Gateway's 404 (the stream is on its function URL)", status)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+acct.APIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("the function URL answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := make(chan map[string]any, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var v map[string]any
				if json.Unmarshal([]byte(data), &v) == nil {
					events <- v
				}
			}
		}
	}()
	next := func() (map[string]any, bool) {
		select {
		case v, ok := <-events:
			return v, ok
		case <-ctx.Done():
			t.Fatal("no event within the test's time")
			return nil, false
		}
	}
	if v, ok := next(); !ok || v["status"] != "processing" || v["id"] != id {
		t.Fatalf("the stream's first event %v (open %v), want %s processing", v, ok, id)
	}
	mustCall(t, l, acct.APIKey, http.MethodPost, "/api/generations/"+id+"/cancel", "", http.StatusOK)
	var final map[string]any
	for {
		v, ok := next()
		if !ok {
			break
		}
		final = v
	}
	if final["status"] != "canceled" {
		t.Errorf("the stream ended after %v, want the canceled view", final)
	}

	// No key: the function's own 401 in the API's envelope.
	noKey, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Error struct{ Code string } `json:"error"`
	}
	json.NewDecoder(noKey.Body).Decode(&env)
	noKey.Body.Close()
	if noKey.StatusCode != http.StatusUnauthorized || env.Error.Code != "unauthorized" {
		t.Errorf("without a key: %d %q, want 401 unauthorized", noKey.StatusCode, env.Error.Code)
	}

	// A browser's preflight from another origin, answered by the URL.
	pre, _ := http.NewRequest(http.MethodOptions, base+path, nil)
	pre.Header.Set("Origin", "https://app.example")
	pre.Header.Set("Access-Control-Request-Method", "GET")
	pre.Header.Set("Access-Control-Request-Headers", "authorization")
	presp, err := http.DefaultClient.Do(pre)
	if err != nil {
		t.Fatal(err)
	}
	presp.Body.Close()
	if presp.Header.Get("Access-Control-Allow-Origin") == "" || !strings.Contains(strings.ToLower(presp.Header.Get("Access-Control-Allow-Headers")), "authorization") {
		t.Errorf("the preflight answered %d %v, want the URL's CORS", presp.StatusCode, presp.Header)
	}
}
