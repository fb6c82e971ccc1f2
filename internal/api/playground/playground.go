// Package playground holds the browser pages of the service: the
// playground (at /) and the account dashboard (at /dashboard). Plain HTML,
// one stylesheet and small ES modules that share their helpers
// (static/playground/common.js), embedded in the binary and served by the
// local runtime. The files in static/ are also deployable as they are
// beside the API (any static host; the pages ask for the API's URL when
// they are not on its origin).
package playground

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var files embed.FS

// Files are the pages' files: index.html (the playground), dashboard.html
// and their assets, playground/*.
func Files() fs.FS {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embed pattern names static; a build defect
	}
	return sub
}

// The pages' Content-Security-Policy: their own scripts and stylesheet
// only (no inline script or style, no eval), the API anywhere (a page on a
// static host asks for the API's URL), no plugins, no <base>, no form
// posts, and never inside a frame (the pages hold API keys: a page on
// another origin framing them could trick clicks). The playground shows
// outputs, which live on an origin of their own (the file origin, a CDN),
// so its images and videos may come from anywhere; the dashboard shows
// none.
const (
	playgroundCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src * data: blob:; media-src * data: blob:; " +
		"connect-src *; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	dashboardCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src *; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

// Mount serves the playground at /, the dashboard at /dashboard and their
// assets under /playground/ on mux, each page with its CSP and
// X-Frame-Options: DENY (for browsers without frame-ancestors).
func Mount(mux *http.ServeMux) {
	static := Files()
	h := http.FileServerFS(static)
	mux.Handle("GET /{$}", page(playgroundCSP, h))
	mux.Handle("GET /dashboard", page(dashboardCSP, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "dashboard.html")
	})))
	mux.Handle("GET /playground/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // files only, no directory listing
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, r)
	}))
}

// page serves a page with its policy and no framing.
func page(csp string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", csp)
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, r)
	})
}
