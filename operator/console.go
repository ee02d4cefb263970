package operator

import (
	"embed"
	"io/fs"
	"net/http"
)

// The console: one page, its script and its style, embedded so that the
// handler needs no files and no build step. They hold no data; the page
// asks the API for everything, with the token the operator signs in with.
//
//go:embed console
var consoleFiles embed.FS

func consoleAssets() http.Handler {
	sub, err := fs.Sub(consoleFiles, "console")
	if err != nil {
		panic(err) // the embedded directory is part of the build
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
