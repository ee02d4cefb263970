package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-go/sluice/examples/demo/server"
)

// recorder is a slog.Handler that keeps every record, at every level.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (*recorder) Enabled(context.Context, slog.Level) bool { return true }
func (*recorder) WithAttrs([]slog.Attr) slog.Handler       { panic("not used by the demo") }
func (*recorder) WithGroup(string) slog.Handler            { panic("not used by the demo") }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}

// logged is a record flattened: level, message and attributes as text.
type logged struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (r *recorder) all() []logged {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logged
	for _, rec := range r.records {
		l := logged{level: rec.Level, msg: rec.Message, attrs: map[string]string{}}
		rec.Attrs(func(a slog.Attr) bool {
			l.attrs[a.Key] = a.Value.String()
			return true
		})
		out = append(out, l)
	}
	return out
}

// find returns the records with message msg.
func find(records []logged, msg string) []logged {
	var out []logged
	for _, l := range records {
		if l.msg == msg {
			out = append(out, l)
		}
	}
	return out
}

// TestObservability drives the demo, then checks GET /metrics for the
// decisions and verifications counted by outcome, and the log for one
// record per event at the right level, with neither the client's IP
// address nor the API key in it.
func TestObservability(t *testing.T) {
	rec := &recorder{}
	h := start(t, server.Config{DSN: filepath.Join(t.TempDir(), "demo.db"), Logger: slog.New(rec)})

	for i := range 6 { // 5 per 10 s: the 6th is denied
		want := http.StatusOK
		if i == 5 {
			want = http.StatusTooManyRequests
		}
		h.do(t, "GET", "/hello", "", "").expect(t, want, "")
	}
	key, id := h.createKey(t, "") // POST /keys: one more decision, allowed
	for i := range 4 {            // 3 per 10 s: the 4th is RATE_LIMITED
		want := http.StatusOK
		if i == 3 {
			want = http.StatusTooManyRequests
		}
		h.do(t, "GET", "/api/data", key, "").expect(t, want, "")
	}
	h.do(t, "GET", "/api/data", "sk_demo_nope", "").expect(t, http.StatusUnauthorized, "INVALID_API_KEY")

	metrics := h.metrics(t)
	for series, want := range map[string]string{
		`sluice_ratelimit_decisions_total{sluice_outcome="allowed",sluice_ratelimit_mode="FixedWindow",sluice_ratelimit_rule="5/10s",sluice_ratelimit_rule_name="default",sluice_ratelimit_shadow="false",sluice_storage="database"}`:                 "5",
		`sluice_ratelimit_decisions_total{sluice_outcome="denied",sluice_ratelimit_mode="FixedWindow",sluice_ratelimit_rule="5/10s",sluice_ratelimit_rule_name="default",sluice_ratelimit_shadow="false",sluice_storage="database"}`:                  "1",
		`sluice_ratelimit_decisions_total{sluice_outcome="allowed",sluice_ratelimit_mode="FixedWindow",sluice_ratelimit_rule="20-M",sluice_ratelimit_rule_name="default",sluice_ratelimit_shadow="false",sluice_storage="database"}`:                  "1",
		`sluice_ratelimit_decision_duration_seconds_count{sluice_outcome="allowed",sluice_ratelimit_mode="FixedWindow",sluice_ratelimit_rule="5/10s",sluice_ratelimit_rule_name="default",sluice_ratelimit_shadow="false",sluice_storage="database"}`: "5",
		`sluice_apikey_verifications_total{sluice_outcome="valid",sluice_storage="database"}`:                            "3",
		`sluice_apikey_verifications_total{sluice_outcome="RATE_LIMITED",sluice_storage="database"}`:                     "1",
		`sluice_apikey_verifications_total{sluice_outcome="INVALID_API_KEY",sluice_storage="database"}`:                  "1",
		`sluice_apikey_verification_duration_seconds_bucket{sluice_outcome="valid",sluice_storage="database",le="+Inf"}`: "3",
	} {
		if got, ok := metrics[series]; !ok || got != want {
			t.Errorf("%s = %q (present %v), want %s", series, got, ok, want)
		}
	}
	if t.Failed() {
		t.Logf("GET /metrics series:\n%s", strings.Join(sortedKeys(metrics), "\n"))
	}
	if n := countPrefix(metrics, "sluice_ratelimit_decisions_total{"); n != 3 {
		t.Errorf("%d rate-limit decision series, want 3 (no other outcome, no error)", n)
	}

	records := rec.all()
	for _, c := range []struct {
		msg   string
		level slog.Level
		n     int
	}{
		{"rate limit: allowed", slog.LevelDebug, 6},
		{"rate limit: denied", slog.LevelInfo, 1},
		{"API key: valid", slog.LevelDebug, 3},
		{"API key: denied", slog.LevelInfo, 2},
	} {
		got := find(records, c.msg)
		if len(got) != c.n {
			t.Errorf("%d records %q, want %d", len(got), c.msg, c.n)
		}
		for _, l := range got {
			if l.level != c.level {
				t.Errorf("%q logged at %v, want %v", c.msg, l.level, c.level)
			}
		}
	}
	denied := find(records, "rate limit: denied")
	if len(denied) == 1 {
		d := denied[0]
		if d.attrs["rule"] != "5/10s" || d.attrs["outcome"] != "denied" || d.attrs["retry_after"] == "" {
			t.Errorf("denial logged as %v, want rule 5/10s, outcome denied and retry_after", d.attrs)
		}
		if !regexp.MustCompile(`^[0-9a-f]{12}$`).MatchString(d.attrs["key_hash"]) {
			t.Errorf("key_hash = %q, want 12 hex digits", d.attrs["key_hash"])
		}
		// One client on one route, one pseudonym: GET /hello's allowed
		// decisions carry the denial's.
		for _, l := range find(records, "rate limit: allowed") {
			if l.attrs["rule"] == "5/10s" && l.attrs["key_hash"] != d.attrs["key_hash"] {
				t.Errorf("key_hash %q on an allowed decision, %q on the denial: one client should have one", l.attrs["key_hash"], d.attrs["key_hash"])
			}
		}
	}
	for _, l := range find(records, "API key: denied") {
		if o := l.attrs["outcome"]; o == "RATE_LIMITED" && l.attrs["key_id"] != itoa(id) {
			t.Errorf("RATE_LIMITED logged with key_id %q, want %d", l.attrs["key_id"], id)
		}
	}
	for _, l := range records {
		for k, v := range l.attrs {
			for _, secret := range []string{"127.0.0.1", key, "sk_demo_nope"} {
				if strings.Contains(v, secret) {
					t.Errorf("record %q: attribute %s = %q holds %q", l.msg, k, v, secret)
				}
			}
		}
	}
	if n := len(find(records, "rate limit: decision failed")) + len(find(records, "API key: verification failed")); n != 0 {
		t.Errorf("%d error records, want none", n)
	}
}

// metrics fetches GET /metrics and returns its samples, series → value.
func (h *harness) metrics(t *testing.T) map[string]string {
	t.Helper()
	resp, err := h.client.Get(h.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("GET /metrics: %d %q\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	samples := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("GET /metrics: malformed line %q", line)
		}
		samples[line[:i]] = line[i+1:]
	}
	return samples
}

func countPrefix(m map[string]string, prefix string) int {
	n := 0
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
