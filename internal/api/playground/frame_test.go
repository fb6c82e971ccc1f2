package playground_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"
)

// TestAnotherOriginCannotFrameThePagesInChromium: a page on another origin
// that frames the playground and the dashboard (to trick a user's clicks
// on a page that holds an API key) gets neither: Chromium refuses both
// frames (frame-ancestors 'none'), while a frame of the page's own origin
// beside them loads, so the check can tell.
func TestAnotherOriginCannotFrameThePagesInChromium(t *testing.T) {
	pw := browserTools(t)
	rt := runtimetest.Start(t, runtime.Config{})
	framer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/control" {
			fmt.Fprint(w, `<!doctype html><p id="control">a page of the framer's own</p>`)
			return
		}
		fmt.Fprintf(w, `<!doctype html><title>a page on another origin</title>
<iframe name="playground" src="%[1]s/"></iframe><iframe name="dashboard" src="%[1]s/dashboard"></iframe>
<iframe name="control" src="/control"></iframe>`, rt.BaseURL)
	}))
	defer framer.Close()
	if origin(framer.URL) == origin(rt.BaseURL) {
		t.Fatalf("the framer %s shares the pages' origin", framer.URL)
	}
	checks, err := runBrowserScript(t, pw, "frame.cjs", "FRAMER_URL="+framer.URL+"/")
	if err != nil {
		t.Fatalf("the browser run failed: %v", err)
	}
	seen := map[string]bool{}
	for _, c := range checks["frame"] {
		name, _ := c["name"].(string)
		seen[name] = true
		loaded := c["content"] == true
		if want := name == "control"; loaded != want {
			t.Errorf("the %s frame (at %v) loaded its page: %v, want %v", name, c["url"], loaded, want)
		}
	}
	if len(seen) != 3 {
		t.Errorf("frames reported: %v, want the playground, the dashboard and the control", checks["frame"])
	}
}
