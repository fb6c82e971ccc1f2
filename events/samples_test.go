package events_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
