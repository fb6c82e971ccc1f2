package events_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/api/routes"
)

// TestEveryFunctionHasItsSampleEventAndEveryEventAFunction: each folder
// under functions/ has its sample event events/<folder>.json (sam local
// invoke -e), and every event file belongs to a function folder: it is
// <folder>.json, or <folder>.<shape>.json for a second way the function is
// invoked (mark-failed.workflow-catch.json: the workflow's MarkFailed state,
// where mark-failed.json is the EventBridge rule's event).
func TestEveryFunctionHasItsSampleEventAndEveryEventAFunction(t *testing.T) {
	entries, err := os.ReadDir("../functions")
	if err != nil {
		t.Fatal(err)
	}
	folders := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		folders[e.Name()] = true
		if _, err := os.Stat(e.Name() + ".json"); err != nil {
			t.Errorf("functions/%s has no sample event events/%s.json (sam local invoke -e)", e.Name(), e.Name())
		}
	}
	if len(folders) == 0 {
		t.Fatal("functions/ holds no function folder")
	}
	events, err := filepath.Glob("*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range events {
		folder, _, _ := strings.Cut(strings.TrimSuffix(name, ".json"), ".")
		if !folders[folder] {
			t.Errorf("events/%s belongs to no function: there is no functions/%s", name, folder)
		}
	}
}

// Each route's sample event is API Gateway's event of that route (the
// routeKey and method of routes.Table), so sam local invoke -e runs the
// route the function serves.
func TestEveryRouteSampleEventIsItsRoutes(t *testing.T) {
	for _, r := range routes.Table() {
		raw, err := os.ReadFile(r.Function + ".json")
		if err != nil {
			t.Errorf("route %s: functions/%s has no sample event: %v", r.Key(), r.Function, err)
			continue
		}
		var ev struct {
			RouteKey       string `json:"routeKey"`
			RequestContext struct {
				HTTP struct{ Method string } `json:"http"`
			} `json:"requestContext"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Errorf("events/%s.json: %v", r.Function, err)
			continue
		}
		if ev.RouteKey != r.Key() || ev.RequestContext.HTTP.Method != r.Method {
			t.Errorf("events/%s.json is the event of %q (method %q), want route %s", r.Function, ev.RouteKey, ev.RequestContext.HTTP.Method, r.Key())
		}
	}
}
