package server_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/ratelimit"
	"github.com/sluice-go/sluice/examples/demo/server"
)

// newClock is the tests' settable clock (adaptertest.Clock): it moves only
// when a test advances it, so windows and refills are crossed without
// sleeping.
func newClock() *adaptertest.Clock {
	return adaptertest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
}

// backends are the databases the end-to-end test runs on. SQLite needs
// nothing; the servers come from SLUICE_POSTGRES_DSN and SLUICE_MYSQL_DSN
// (skipped without them, required with CI=true).
var backends = []struct {
	name string
	db   string
	dsn  func(testing.TB) string
}{
	{"sqlite", server.DBSQLite, func(t testing.TB) string { return filepath.Join(t.TempDir(), "demo.db") }},
	{"postgres", server.DBPostgres, adaptertest.PostgresDSN},
	{"mysql", server.DBMySQL, adaptertest.MySQLDSN},
}

// TestEndToEnd starts the demo for every ORM and database on a free port
// and drives it with a real HTTP client.
func TestEndToEnd(t *testing.T) {
	for _, orm := range server.ORMs {
		for _, b := range backends {
			if orm == server.ORMPgx && b.db != server.DBPostgres {
				continue // pgx speaks PostgreSQL only (TestPgxNeedsPostgres)
			}
			t.Run(orm+"/"+b.name, func(t *testing.T) {
				t.Parallel()
				c := newClock()
				h := start(t, server.Config{
					ORM:   orm,
					DB:    b.db,
					DSN:   b.dsn(t),
					Clock: c.Now,
					// Helpers share the database servers: tables of our own,
					// dropped at the end.
					Naming:     uniqueTables(t),
					DropTables: b.db != server.DBSQLite,
				})
				h.clock = c
				h.scenario(t)
			})
		}
	}
}

// TestEndToEndRedis keeps the per-IP counters in Redis (SLUICE_REDIS_ADDR).
// Redis expires counters on its own clock, so this test crosses no window.
func TestEndToEndRedis(t *testing.T) {
	addr := adaptertest.RedisAddr(t)
	h := start(t, server.Config{Redis: addr, RedisPrefix: "sluice-demo-test:" + suffix(t) + ":"})
	if !strings.Contains(h.srv.Where(), "Redis at "+addr) {
		t.Fatalf("Where() = %q, want the Redis address", h.srv.Where())
	}
	res, err := server.Burst(context.Background(), server.BurstConfig{URL: h.base + "/hello", N: 60})
	if err != nil {
		t.Fatal(err)
	}
	if res.Admitted != 5 || res.Denied != 55 || res.Failed != 0 || res.Limit != 5 {
		t.Fatalf("burst on Redis counters: %v (first error %v), want 5 admitted and 55 denied", res, res.FirstError)
	}
	r := h.do(t, "GET", "/hello", "", "")
	r.expect(t, http.StatusTooManyRequests, "RATE_LIMITED")
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 || s > 10 {
		t.Fatalf("Retry-After = %q, want 1..10 seconds", r.header.Get("Retry-After"))
	}
}

// harness is a running demo server and a client for it.
type harness struct {
	srv    *server.Server
	base   string
	client *http.Client
	clock  *adaptertest.Clock
}

func start(t *testing.T, cfg server.Config) *harness {
	t.Helper()
	srv, err := server.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ts := httptest.NewServer(srv) // listens on 127.0.0.1:0
	t.Cleanup(ts.Close)
	return &harness{srv: srv, base: ts.URL, client: ts.Client()}
}

func suffix(t testing.TB) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func uniqueTables(t testing.TB) core.Naming {
	s := suffix(t)
	return core.Naming{Tables: map[string]string{
		core.ModelRateLimit:    "demo_rate_limit_" + s,
		core.ModelAPIKey:       "demo_apikey_" + s,
		core.ModelRerolledKey:  "demo_rerolled_key_" + s,
		core.ModelAPIKeyLimit:  "demo_apikey_limit_" + s,
		core.ModelAPIKeyRefill: "demo_apikey_refill_" + s,
	}}
}

// response is an HTTP answer with its JSON body decoded.
type response struct {
	status int
	header http.Header
	body   map[string]any
}

func (h *harness) do(t *testing.T, method, path, key, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, h.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	r := response{status: resp.StatusCode, header: resp.Header}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s: Content-Type %q, want application/json", method, path, ct)
	}
	if err := json.NewDecoder(resp.Body).Decode(&r.body); err != nil {
		t.Fatalf("%s %s: decoding the JSON body: %v", method, path, err)
	}
	return r
}

// expect checks the status and, when code is not empty, the body's code.
func (r response) expect(t *testing.T, status int, code string) {
	t.Helper()
	if r.status != status || (code != "" && r.body["code"] != code) {
		t.Fatalf("got %d %v, want %d %s", r.status, r.body, status, code)
	}
}

func (r response) headers(t *testing.T, want map[string]string) {
	t.Helper()
	for name, v := range want {
		if got := r.header.Get(name); got != v {
			t.Errorf("header %s = %q, want %q (all: %v)", name, got, v, r.header)
		}
	}
}

// num reads a JSON number at a dotted path such as "key.remaining".
func (r response) num(t *testing.T, path string) int64 {
	t.Helper()
	var v any = r.body
	for _, p := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: not an object in %v", path, r.body)
		}
		v = m[p]
	}
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("%s = %v, want a number (body %v)", path, v, r.body)
	}
	return int64(f)
}

// createKey creates a key with the given JSON body and returns its
// plaintext and id.
func (h *harness) createKey(t *testing.T, body string) (string, int64) {
	t.Helper()
	r := h.do(t, "POST", "/keys", "", body)
	r.expect(t, http.StatusCreated, "")
	key, _ := r.body["key"].(string)
	if !strings.HasPrefix(key, server.KeyPrefix) || len(key) != len(server.KeyPrefix)+apikey.KeyLength {
		t.Fatalf("key %q: want %s and %d letters", key, server.KeyPrefix, apikey.KeyLength)
	}
	return key, r.num(t, "id")
}

func (h *harness) stored(t *testing.T, id int64) *apikey.Key {
	t.Helper()
	k, err := h.srv.Keys.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Keys.Get(%d): %v", id, err)
	}
	return k
}

// scenario runs the demo's story in order on one server and one clock.
func (h *harness) scenario(t *testing.T) {
	ctx := context.Background()

	t.Run("per-IP limit answers 429 with its headers", func(t *testing.T) {
		for i := int64(1); i <= 5; i++ {
			r := h.do(t, "GET", "/hello", "", "")
			r.expect(t, http.StatusOK, "")
			r.headers(t, map[string]string{"RateLimit-Limit": "5", "RateLimit-Remaining": strconv.FormatInt(5-i, 10), "RateLimit-Reset": "10"})
		}
		r := h.do(t, "GET", "/hello", "", "")
		r.expect(t, http.StatusTooManyRequests, "RATE_LIMITED")
		r.headers(t, map[string]string{"Retry-After": "10", "X-Retry-After": "10",
			"RateLimit-Limit": "5", "RateLimit-Remaining": "0", "RateLimit-Reset": "10"})
		if r.num(t, "retryAfter") != 10 || r.num(t, "status") != 429 {
			t.Errorf("body retryAfter = %v, status %v; want 10 and 429", r.body["retryAfter"], r.body["status"])
		}
		h.clock.Advance(4 * time.Second)
		r = h.do(t, "GET", "/hello", "", "")
		r.expect(t, http.StatusTooManyRequests, "RATE_LIMITED")
		r.headers(t, map[string]string{"Retry-After": "6", "X-Retry-After": "6", "RateLimit-Reset": "6"})
		h.clock.Advance(6 * time.Second) // the window ends: a new one opens
		r = h.do(t, "GET", "/hello", "", "")
		r.expect(t, http.StatusOK, "")
		r.headers(t, map[string]string{"RateLimit-Remaining": "4", "RateLimit-Reset": "10"})
	})

	t.Run("key creation shows the key once and stores its hash", func(t *testing.T) {
		r := h.do(t, "POST", "/keys", "", "")
		r.expect(t, http.StatusCreated, "")
		key, _ := r.body["key"].(string)
		if r.num(t, "remaining") != 5 || r.num(t, "rateLimit.max") != 3 || r.num(t, "refill.amount") != 5 {
			t.Errorf("defaults: %v, want quota 5, rate limit 3, refill 5", r.body)
		}
		k := h.stored(t, r.num(t, "id"))
		if k.Hash != keystore.Hash(key) || strings.Contains(k.Hash, key) {
			t.Errorf("stored hash %q, want keystore.Hash of the plaintext", k.Hash)
		}
	})

	t.Run("bad keys answer 401", func(t *testing.T) {
		h.do(t, "GET", "/api/data", "", "").expect(t, http.StatusUnauthorized, "MISSING_API_KEY")
		h.do(t, "GET", "/api/data", "sk_demo_nope", "").expect(t, http.StatusUnauthorized, "INVALID_API_KEY")
		key, id := h.createKey(t, "")
		disabled := false
		if _, err := h.srv.Keys.Update(ctx, id, apikey.UpdateParams{Enabled: &disabled}); err != nil {
			t.Fatal(err)
		}
		h.do(t, "GET", "/api/data", key, "").expect(t, http.StatusUnauthorized, "KEY_DISABLED")
		key, _ = h.createKey(t, `{"expiresIn":"1h"}`)
		h.do(t, "GET", "/api/data", key, "").expect(t, http.StatusOK, "")
		h.clock.Advance(time.Hour)
		h.do(t, "GET", "/api/data", key, "").expect(t, http.StatusUnauthorized, "KEY_EXPIRED")
	})

	t.Run("a request the key's rate limit denies spends no quota", func(t *testing.T) {
		key, id := h.createKey(t, "") // quota 5, 3 per 10 s
		for want := int64(4); want >= 2; want-- {
			r := h.do(t, "GET", "/api/data", key, "")
			r.expect(t, http.StatusOK, "")
			if r.num(t, "key.remaining") != want {
				t.Fatalf("remaining %d, want %d", r.num(t, "key.remaining"), want)
			}
		}
		r := h.do(t, "GET", "/api/data", key, "")
		r.expect(t, http.StatusTooManyRequests, "RATE_LIMITED")
		r.headers(t, map[string]string{"Retry-After": "10", "X-Retry-After": "10", "RateLimit-Limit": "3", "RateLimit-Remaining": "0", "RateLimit-Reset": "10"})
		if r.num(t, "retryAfter") != 10 || r.num(t, "status") != 429 {
			t.Errorf("retryAfter = %v, status %v; want 10 s and 429", r.body["retryAfter"], r.body["status"])
		}
		if k := h.stored(t, id); *k.Remaining != 2 || k.RequestCount != 3 {
			t.Errorf("stored remaining %d, requestCount %d; want 2 and 3", *k.Remaining, k.RequestCount)
		}
		h.clock.Advance(10 * time.Second)
		r = h.do(t, "GET", "/api/data", key, "")
		r.expect(t, http.StatusOK, "")
		if r.num(t, "key.remaining") != 1 {
			t.Errorf("after the window: remaining %d, want 1", r.num(t, "key.remaining"))
		}
	})

	t.Run("POST /api/data needs the data:write permission and spends nothing without it", func(t *testing.T) {
		reader, readerID := h.createKey(t, `{"rateLimit":100,"permissions":{"data":["read"]}}`)
		writer, _ := h.createKey(t, `{"rateLimit":100,"permissions":{"data":["read","write"]}}`)
		r := h.do(t, "POST", "/api/data", reader, "")
		r.expect(t, http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
		if k := h.stored(t, readerID); *k.Remaining != 5 {
			t.Errorf("the refused key's remaining %d, want 5: a refusal spends nothing", *k.Remaining)
		}
		h.do(t, "GET", "/api/data", reader, "").expect(t, http.StatusOK, "")
		h.do(t, "POST", "/api/data", writer, "").expect(t, http.StatusOK, "")
		h.do(t, "POST", "/keys", "", `{"permissions":{"data":[""]}}`).expect(t, http.StatusBadRequest, "INVALID_REQUEST")
	})

	t.Run("POST /keys/reroll rotates a key: the same record, the old key works for the grace", func(t *testing.T) {
		old, id := h.createKey(t, `{"rateLimit":100,"quota":10}`)
		h.do(t, "GET", "/api/data", old, "").expect(t, http.StatusOK, "")
		h.do(t, "POST", "/keys/reroll", "", "").expect(t, http.StatusUnauthorized, "MISSING_API_KEY")
		h.do(t, "POST", "/keys/reroll", old, `{"grace":"-1s"}`).expect(t, http.StatusBadRequest, "INVALID_REQUEST")
		r := h.do(t, "POST", "/keys/reroll", old, `{"grace":"30s"}`)
		r.expect(t, http.StatusOK, "")
		fresh, _ := r.body["key"].(string)
		if r.num(t, "id") != id || r.num(t, "remaining") != 9 || fresh == old || !strings.HasPrefix(fresh, server.KeyPrefix) {
			t.Fatalf("reroll answered %v: want key %d with remaining 9 and a new plaintext", r.body, id)
		}
		h.do(t, "GET", "/api/data", fresh, "").expect(t, http.StatusOK, "")
		h.do(t, "GET", "/api/data", old, "").expect(t, http.StatusOK, "")
		h.clock.Advance(30 * time.Second)
		h.do(t, "GET", "/api/data", old, "").expect(t, http.StatusUnauthorized, "INVALID_API_KEY")
		h.do(t, "POST", "/keys/reroll", old, "").expect(t, http.StatusUnauthorized, "INVALID_API_KEY")
		h.do(t, "GET", "/api/data", fresh, "").expect(t, http.StatusOK, "")
		if k := h.stored(t, id); *k.Remaining != 6 || k.Hash != keystore.Hash(fresh) {
			t.Errorf("stored remaining %d, hash %q; want 6 and the new key's hash", *k.Remaining, k.Hash)
		}
	})

	t.Run("GET /usage counts each key's verifications from the API-key events", func(t *testing.T) {
		key, id := h.createKey(t, `{"rateLimit":100}`)
		h.do(t, "GET", "/api/data", key, "").expect(t, http.StatusOK, "")
		h.do(t, "GET", "/api/data", key, "").expect(t, http.StatusOK, "")
		disabled := false
		if _, err := h.srv.Keys.Update(ctx, id, apikey.UpdateParams{Enabled: &disabled}); err != nil {
			t.Fatal(err)
		}
		h.do(t, "GET", "/api/data", key, "").expect(t, http.StatusUnauthorized, "KEY_DISABLED")
		r := h.do(t, "GET", "/usage", "", "")
		r.expect(t, http.StatusOK, "")
		list, _ := r.body["keys"].([]any)
		var line map[string]any
		for _, l := range list {
			if m, _ := l.(map[string]any); m != nil && m["id"] == float64(id) {
				line = m
			}
		}
		denied, _ := line["denied"].(map[string]any)
		if line == nil || line["valid"] != float64(2) || len(denied) != 1 || denied["KEY_DISABLED"] != float64(1) {
			t.Fatalf("usage of key %d: %v, want 2 valid and 1 KEY_DISABLED (all: %v)", id, line, list)
		}
		if ok, err := h.srv.Keys.Delete(ctx, id); err != nil || !ok {
			t.Fatal(ok, err)
		}
		for _, l := range h.do(t, "GET", "/usage", "", "").body["keys"].([]any) {
			if l.(map[string]any)["id"] == float64(id) {
				t.Fatalf("a deleted key is still listed: %v", l)
			}
		}
	})

	t.Run("quota exhaustion and refill", func(t *testing.T) {
		key, _ := h.createKey(t, `{"quota":2,"refillEvery":"1m","rateLimit":100}`)
		h.do(t, "GET", "/api/data", key, "").expect(t, http.StatusOK, "")
		h.do(t, "GET", "/api/data", key, "").expect(t, http.StatusOK, "")
		r := h.do(t, "GET", "/api/data", key, "")
		r.expect(t, http.StatusTooManyRequests, "USAGE_EXCEEDED")
		r.headers(t, map[string]string{"Retry-After": "60", "X-Retry-After": "60", "RateLimit-Limit": "2", "RateLimit-Remaining": "0", "RateLimit-Reset": "60"})
		if r.num(t, "retryAfter") != 60 {
			t.Errorf("retryAfter = %v, want 60 s", r.body["retryAfter"])
		}
		h.clock.Advance(59 * time.Second)
		r = h.do(t, "GET", "/api/data", key, "")
		r.expect(t, http.StatusTooManyRequests, "USAGE_EXCEEDED")
		r.headers(t, map[string]string{"Retry-After": "1"})
		h.clock.Advance(time.Second) // the refill is due
		r = h.do(t, "GET", "/api/data", key, "")
		r.expect(t, http.StatusOK, "")
		if r.num(t, "key.remaining") != 1 {
			t.Errorf("after the refill: remaining %d, want 1 (refilled to 2, minus this request)", r.num(t, "key.remaining"))
		}
	})

	t.Run("a burst on /hello admits exactly the limit", func(t *testing.T) {
		h.clock.Advance(10 * time.Second) // a fresh window
		res, err := server.Burst(ctx, server.BurstConfig{URL: h.base + "/hello", N: 100})
		if err != nil {
			t.Fatal(err)
		}
		if res.Admitted != 5 || res.Denied != 95 || res.Failed != 0 || res.Limit != 5 {
			t.Fatalf("%v (first error %v), want admitted 5 of 100 (limit 5), 95 denied", res, res.FirstError)
		}
		if !strings.HasPrefix(res.String(), "admitted 5 of 100 (limit 5)") {
			t.Errorf("String() = %q", res.String())
		}
	})

	t.Run("a burst on a key admits exactly its rate limit and stores it", func(t *testing.T) {
		key, id := h.createKey(t, `{"quota":1000,"rateLimit":7,"rateLimitWindow":"1m"}`)
		res, err := server.Burst(ctx, server.BurstConfig{URL: h.base + "/api/data", N: 60, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if res.Admitted != 7 || res.Denied != 53 || res.Failed != 0 || res.Limit != 7 {
			t.Fatalf("%v (first error %v), want 7 admitted, 53 denied", res, res.FirstError)
		}
		if k := h.stored(t, id); *k.Remaining != 993 || k.RequestCount != 7 {
			t.Errorf("stored remaining %d, requestCount %d; want 993 and 7", *k.Remaining, k.RequestCount)
		}
	})

	t.Run("a burst on a key admits exactly its quota", func(t *testing.T) {
		key, id := h.createKey(t, `{"quota":4,"refillEvery":"0s","rateLimit":0}`)
		res, err := server.Burst(ctx, server.BurstConfig{URL: h.base + "/api/data", N: 50, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if res.Admitted != 4 || res.Denied != 46 || res.Failed != 0 {
			t.Fatalf("%v (first error %v), want 4 admitted, 46 denied", res, res.FirstError)
		}
		if k := h.stored(t, id); *k.Remaining != 0 {
			t.Errorf("stored remaining %d, want 0", *k.Remaining)
		}
	})
}

// TestPgxNeedsPostgres: the pgx adapter on another database is a
// configuration error, reported before anything is opened.
func TestPgxNeedsPostgres(t *testing.T) {
	for _, db := range []string{server.DBSQLite, server.DBMySQL} {
		_, err := server.New(t.Context(), server.Config{ORM: server.ORMPgx, DB: db, DSN: "x"})
		if err == nil || !strings.Contains(err.Error(), "PostgreSQL only") {
			t.Errorf("pgx on %s: err = %v, want a refusal naming PostgreSQL", db, err)
		}
	}
}

// goNames are the Go names behind POST /keys: the request struct, the
// key manager's parameters, and encoding/json's way of naming them.
var goNames = regexp.MustCompile(`\b(KeyRequest|struct|ReferenceID|Owner|Name|Quota|Unlimited|Remaining|Refill|RefillEvery|RefillAmount|Interval|Amount|RateLimit|RateLimitWindow|Window|Max|ExpiresIn|Duration|int64)\b`)

// TestKeyRequestErrors sends POST /keys bodies that are wrong in one way
// each. The checks run before the database is touched, so one backend is
// enough.
func TestKeyRequestErrors(t *testing.T) {
	h := start(t, server.Config{
		DSN:        filepath.Join(t.TempDir(), "demo.db"),
		CreateKeys: ratelimit.Rule{Window: time.Minute, Max: 1000}, // more requests than the default allows
	})
	// Each error names the field as the body spells it, never as the
	// Go structs behind it do.
	for body, want := range map[string]string{
		`{"quota":"x"}`:                         `quota must be a whole number, not string`,
		`{"quota":1.5}`:                         `quota must be a whole number, not number 1.5`,
		`{"quota":-1}`:                          `quota -1 is negative`,
		`{"quota":0}`:                           `quota 0 would refill to 0`,
		`{"name":3}`:                            `name must be a string`,
		`{"unlimited":"yes"}`:                   `unlimited must be true or false`,
		`{"bogus":1}`:                           `unknown field "bogus"`,
		`[]`:                                    `the body must be a JSON object`,
		`{"refillEvery":5}`:                     `refillEvery must be a duration string such as "10s" or "1m30s", not 5`,
		`{"refillEvery":"soon"}`:                `refillEvery must be a duration string such as "10s" or "1m30s", not "soon"`,
		`{"refillEvery":"-1m"}`:                 `refillEvery must be positive`,
		`{"refillAmount":3,"refillEvery":"0s"}`: `refillAmount needs a positive refillEvery`,
		`{"refillAmount":0}`:                    `refillAmount must be positive`,
		`{"rateLimit":-1}`:                      `rateLimit -1 is negative`,
		`{"rateLimitWindow":"1.5ms"}`:           `rateLimitWindow must be a whole number of milliseconds`,
		`{"rateLimitWindow":"0s"}`:              `rateLimitWindow must be positive`,
		`{"unlimited":true,"quota":3}`:          `unlimited excludes quota`,
		`{"expiresIn":"-1h"}`:                   `expiresIn must be positive`,
		`{"expiresIn":"1us"}`:                   `expiresIn must be a whole number of milliseconds`,
		`{"owner":"` + strings.Repeat("o", 256) + `"}`: `owner is longer than 255 bytes`,
		`{"name":"` + strings.Repeat("n", 256) + `"}`:  `name must be valid UTF-8 of at most 255 characters`,
	} {
		r := h.do(t, "POST", "/keys", "", body)
		r.expect(t, http.StatusBadRequest, "INVALID_REQUEST")
		msg, _ := r.body["message"].(string)
		if !strings.Contains(msg, want) {
			t.Errorf("%.40s: message %q, want it to contain %q", body, msg, want)
		}
		if m := goNames.FindString(msg); m != "" {
			t.Errorf("%.40s: message %q names the Go field or type %s", body, msg, m)
		}
	}
}
