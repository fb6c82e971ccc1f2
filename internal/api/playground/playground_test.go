package playground

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/longform"
)

func TestThePagesAndTheirAssetsAreServed(t *testing.T) {
	mux := http.NewServeMux()
	Mount(mux)
	mux.HandleFunc("/", http.NotFound)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tests := []struct{ path, contentType, contains string }{
		{"/", "text/html", `<script type="module" src="playground/app.js"></script>`},
		{"/playground/app.js", "text/javascript", `"/api/models"`},
		{"/playground/style.css", "text/css", ".output img"},
		{"/dashboard", "text/html", `<script type="module" src="playground/dashboard.js"></script>`},
		{"/playground/dashboard.js", "text/javascript", "`/api/account/transactions?${q}`"},
		{"/playground/common.js", "text/javascript", "export async function callApi("},
	}
	for _, tt := range tests {
		resp, err := http.Get(srv.URL + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), tt.contentType) || !strings.Contains(string(body), tt.contains) {
			t.Errorf("GET %s: %d %s, body has %q: %v", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), tt.contains, strings.Contains(string(body), tt.contains))
		}
	}
	for _, path := range []string{"/index.html.bak", "/api/unknown", "/playground/missing.js", "/playground/", "/dashboard.html", "/dashboard/"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
}

// The page lists the narration languages and video styles itself (a static
// page has no route to ask); they must stay the service's.
func TestThePagesListsAreTheServices(t *testing.T) {
	page, err := fs.ReadFile(Files(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	options := func(selectID string) []string {
		block := regexp.MustCompile(`(?s)<select id="` + selectID + `">(.*?)</select>`).FindSubmatch(page)
		if block == nil {
			t.Fatalf("index.html has no select #%s", selectID)
		}
		var values []string
		for _, m := range regexp.MustCompile(`<option value="([^"]*)"`).FindAllSubmatch(block[1], -1) {
			values = append(values, string(m[1]))
		}
		return values
	}
	if got, want := options("story-language"), longform.LanguageCodes(); !slices.Equal(got, want) {
		t.Errorf("the page's languages %v, the service's %v", got, want)
	}
	styles := options("story-style")
	want := longform.StyleNames()
	if !slices.Equal(slices.Sorted(slices.Values(styles)), want) || styles[0] != "auto" {
		t.Errorf("the page's styles %v, the service's %v (auto first)", styles, want)
	}
}

// TestThePagesForbidFramingAndCarryTheirCSP: each page is sent with a
// Content-Security-Policy that forbids framing (frame-ancestors 'none', and
// X-Frame-Options: DENY for older browsers), runs its own scripts and
// styles only (no inline script or style, no eval), and posts no form;
// the page's own <meta> policy says the same but frame-ancestors, which a
// meta cannot say (for static hosts).
func TestThePagesForbidFramingAndCarryTheirCSP(t *testing.T) {
	mux := http.NewServeMux()
	Mount(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	meta := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`)
	for _, tt := range []struct{ path, csp string }{{"/", playgroundCSP}, {"/dashboard", dashboardCSP}} {
		resp, err := http.Get(srv.URL + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if csp != tt.csp || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: CSP %q, X-Frame-Options %q", tt.path, csp, resp.Header.Get("X-Frame-Options"))
		}
		directives := map[string]string{}
		for _, d := range strings.Split(csp, ";") {
			name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
			directives[name] = value
		}
		for name, want := range map[string]string{"frame-ancestors": "'none'", "script-src": "'self'", "style-src": "'self'",
			"object-src": "'none'", "base-uri": "'none'", "form-action": "'none'"} {
			if directives[name] != want {
				t.Errorf("GET %s: %s is %q, want %q", tt.path, name, directives[name], want)
			}
		}
		if strings.Contains(csp, "unsafe-") {
			t.Errorf("GET %s: the policy allows %q", tt.path, csp)
		}
		m := meta.FindSubmatch(body)
		if m == nil || string(m[1])+"; frame-ancestors 'none'" != csp {
			t.Errorf("GET %s: the page's meta policy is %q, want the header's but frame-ancestors", tt.path, m)
		}
	}
}
