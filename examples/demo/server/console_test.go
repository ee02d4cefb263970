package server_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/sluice-go/sluice/examples/demo/server"
)

// TestConsoleInBrowser drives the operator console in headless Chromium,
// as an operator would, against the demo on SQLite and on PostgreSQL:
// sign in, create a key, copy its secret, spend its quota through the
// demo's API while the usage bar and the live chart follow, reroll,
// revoke, and see verification fail at once. Each step saves a
// screenshot in the test's artifact directory (go test -artifacts keeps
// them); a JavaScript error, a console error or a failed request fails
// the test.
func TestConsoleInBrowser(t *testing.T) {
	chromium := chromiumPath(t)
	for _, b := range backends[:2] { // SQLite and PostgreSQL
		t.Run(b.name, func(t *testing.T) {
			h := start(t, server.Config{DB: b.db, DSN: b.dsn(t), Naming: uniqueTables(t), DropTables: b.db != server.DBSQLite,
				OperatorToken: "console-test-token"})
			consoleFlow(t, chromium, h)
		})
	}
}

// chromiumPath finds Debian's chromium (which .ci/run installs), or
// skips; CI requires it.
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is required in CI: apt-get install chromium")
	}
	t.Skip("no chromium on PATH: apt-get install chromium to run the browser tests")
	return ""
}

// pageProblems collects what makes a page broken.
type pageProblems struct {
	mu   sync.Mutex
	list []string
}

func (p *pageProblems) add(format string, args ...any) {
	p.mu.Lock()
	p.list = append(p.list, fmt.Sprintf(format, args...))
	p.mu.Unlock()
}

func (p *pageProblems) check(t *testing.T, step string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.list) > 0 {
		t.Fatalf("%s: the page is broken: %s", step, strings.Join(p.list, "; "))
	}
}

func (p *pageProblems) listen(ev any) {
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		p.add("JavaScript exception: %s (%s:%d)", msg, d.URL, d.LineNumber)
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			p.add("console.%s: %s", e.Type, strings.Join(args, " "))
		}
	case *cdplog.EventEntryAdded:
		if e.Entry.Level == cdplog.EntryLevelError {
			p.add("browser log: %s (%s)", e.Entry.Text, e.Entry.URL)
		}
	case *network.EventLoadingFailed:
		if !e.Canceled { // the live view's stream is cancelled on leaving a page
			p.add("request failed: %s %s", e.Type, e.ErrorText)
		}
	case *network.EventResponseReceived:
		if e.Response.Status >= 400 {
			p.add("HTTP %d for %s", e.Response.Status, e.Response.URL)
		}
	}
}

func consoleFlow(t *testing.T, chromium string, h *harness) {
	dir := t.ArtifactDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	var problems pageProblems
	// The first call starts the browser, under a context without a
	// deadline (a deadline there would bound the browser's life).
	if err := chromedp.Listen(bctx, problems.listen); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	for _, perm := range []string{"clipboard-read", "clipboard-write"} {
		if _, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: perm}, Setting: browser.PermissionSettingGranted, Origin: h.base,
		}); err != nil {
			t.Fatal(err)
		}
	}

	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("%s: screenshot: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		problems.check(t, name)
	}
	text := func(id string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID(id)))
		if err != nil {
			t.Fatalf("text of #%s: %v", id, err)
		}
		return s
	}
	// poll waits until the JavaScript expression is true.
	poll := func(expr string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(20*time.Second))
	}
	verify := func(key string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", h.base+"/api/data", nil)
		req.Header.Set("x-api-key", key)
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	id := func(s string) chromedp.ID { return chromedp.ID(s) }

	step("01-sign-in",
		chromedp.Navigate(h.base+"/operator/"),
		chromedp.WaitVisible(id("token")))
	step("02-keys",
		chromedp.SendKeys(id("token"), "console-test-token"),
		chromedp.Click(chromedp.CSS("#signin-form button")),
		chromedp.WaitVisible(id("view-keys")),
		poll(`!document.querySelector('#keys-empty').hidden && document.querySelector('#overview-chart').dataset.samples >= 1`))

	step("03-key-created",
		chromedp.Click(id("nav-new")),
		chromedp.WaitVisible(id("new-owner")),
		chromedp.SendKeys(id("new-owner"), "browser-user"),
		chromedp.SendKeys(id("new-name"), "browser key"),
		chromedp.SendKeys(id("new-prefix"), "sk_demo_"),
		chromedp.SendKeys(id("new-remaining"), "3"),
		chromedp.SendKeys(id("new-permissions"), "data:read"),
		chromedp.Click(chromedp.CSS("#create-form button[type=submit]")),
		chromedp.WaitVisible(id("secret")))
	secret := text("secret")
	if !strings.HasPrefix(secret, "sk_demo_") {
		t.Fatalf("the console shows the secret %q", secret)
	}

	step("04-secret-copied",
		chromedp.Click(id("copy-secret")),
		poll(`document.querySelector('#message').textContent.includes('copied')`))
	clipboard, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
	if err != nil || clipboard != secret {
		t.Fatalf("the clipboard holds %q (%v), want the secret", clipboard, err)
	}

	step("05-key-page",
		chromedp.Click(id("secret-key-link")),
		chromedp.WaitVisible(id("view-key")),
		poll(`document.querySelector('#key-chart').dataset.samples >= 1 && document.querySelector('#usage').dataset.remaining === '3'`))

	// Spend the quota through the demo's API with the secret the
	// clipboard held: three pass, the fourth is refused.
	for i, want := range []int{200, 200, 200, 429} {
		if got := verify(clipboard); got != want {
			t.Fatalf("verification %d: %d, want %d", i+1, got, want)
		}
	}
	step("06-quota-spent",
		poll(`document.querySelector('#usage').dataset.remaining === '0' && document.querySelector('#usage').value === 3`),
		poll(`document.querySelector('#key-chart').dataset.totalAllowed === '3' && document.querySelector('#key-chart').dataset.totalDenied === '1'`))

	step("07-phone",
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
		poll(`document.documentElement.scrollWidth <= window.innerWidth`))
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}

	step("08-confirm-reroll",
		chromedp.Click(id("reroll")),
		chromedp.WaitVisible(id("confirm-ok")))
	step("09-rerolled",
		chromedp.Click(id("confirm-ok")),
		poll(fmt.Sprintf(`document.querySelector('#secret').textContent !== %q && document.querySelector('#message').textContent === 'Key rerolled.'`, secret)))
	fresh := text("secret")
	if got := verify(secret); got != http.StatusUnauthorized {
		t.Errorf("the old secret after a reroll without grace: %d, want 401", got)
	}
	if got := verify(fresh); got != http.StatusTooManyRequests {
		t.Errorf("the new secret of a spent key: %d, want 429 (the quota goes on across a reroll)", got)
	}

	step("10-revoked",
		chromedp.Click(id("revoke")),
		chromedp.WaitVisible(id("confirm-ok")),
		chromedp.Click(id("confirm-ok")),
		chromedp.WaitVisible(id("view-keys")),
		poll(`document.querySelector('#message').textContent === 'Key revoked.' && !document.querySelector('#keys-empty').hidden`))
	if got := verify(fresh); got != http.StatusUnauthorized {
		t.Errorf("a revoked key: %d, want 401 at once", got)
	}
}
