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

// Mount serves the playground at /, the dashboard at /dashboard and their
// assets under /playground/ on mux.
func Mount(mux *http.ServeMux) {
	static := Files()
	h := http.FileServerFS(static)
	mux.Handle("GET /{$}", h)
	mux.HandleFunc("GET /dashboard", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "dashboard.html")
	})
	mux.Handle("GET /playground/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // files only, no directory listing
			return
		}
		h.ServeHTTP(w, r)
	}))
}
