// Package playground is the browser playground: plain HTML, CSS and a small
// script, embedded in the binary and served by the local runtime at /. The
// files in static/ are also deployable as they are beside the API (any
// static host; the page asks for the API's URL when it is not on the same
// origin).
package playground

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var files embed.FS

// Files are the page's files: index.html and playground/*.
func Files() fs.FS {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embed pattern names static; a build defect
	}
	return sub
}

// Mount serves the page at / and its assets under /playground/ on mux.
func Mount(mux *http.ServeMux) {
	h := http.FileServerFS(Files())
	mux.Handle("GET /{$}", h)
	mux.Handle("GET /playground/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // files only, no directory listing
			return
		}
		h.ServeHTTP(w, r)
	}))
}
