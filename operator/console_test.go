package operator_test

import (
	"regexp"
	"strings"
	"testing"
)

// TestConsoleAssets: the console's files are served without a token,
// under a policy that runs no inline script, and the page runs none.
func TestConsoleAssets(t *testing.T) {
	e := newEnv(t, backends[0])
	for path, kind := range map[string]string{"/": "text/html", "/app.js": "javascript", "/app.css": "text/css"} {
		r := e.send(t, "GET", path, "", nil).ok(t)
		if ct := r.header.Get("Content-Type"); !strings.Contains(ct, kind) {
			t.Errorf("%s: Content-Type %q", path, ct)
		}
		csp := r.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: Content-Security-Policy %q", path, csp)
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", path)
		}
	}
	page := e.send(t, "GET", "/", "", nil).raw
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(page, -1) {
		if !strings.Contains(tag, `src="`) {
			t.Errorf("an inline script: %s", tag)
		}
	}
	if regexp.MustCompile(`\son[a-z]+=`).MatchString(page) || strings.Contains(page, "style=") {
		t.Error("the page has inline event handlers or styles, which the policy blocks")
	}
	// API answers carry the policy too.
	if r := e.call(t, "GET", "/api-key/list", ""); r.header.Get("Content-Security-Policy") == "" {
		t.Error("an API answer without Content-Security-Policy")
	}
}
