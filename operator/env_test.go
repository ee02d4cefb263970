package operator_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
	"github.com/sluice-go/sluice/operator"
)

// backend is a database the API's tests run on, through sluice's SQL engine.
type backend struct {
	name    string
	driver  string
	dialect sluicesql.Dialect
	dsn     func(testing.TB) string
}

var backends = []backend{
	{"sqlite", "sqlite", sluicesql.SQLite, adaptertest.SQLiteDSN},
	{"postgres", "pgx", sluicesql.Postgres, adaptertest.PostgresDSN},
	{"mariadb", "mysql", sluicesql.MySQL, adaptertest.MySQLDSN},
}

// eachBackend runs fn on every database, each in its own tables.
func eachBackend(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, newEnv(t, b)) })
	}
}

const token = "op-token-for-tests"

// env is a handler over a manager and a limiter on one database, served
// by a test server, with a clock the test moves.
type env struct {
	db      *core.DB
	keys    *apikey.Manager
	limiter *ratelimit.Limiter
	rec     *operator.Recorder
	srv     *httptest.Server
	clock   *clock
	log     *bytes.Buffer // the handler's log
	logMu   *sync.Mutex
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

var hello = ratelimit.Rule{Window: 10 * time.Second, Max: 3}

// daily is a calendar rule: 100 a day, reset at midnight in Berlin.
var daily = func() ratelimit.Rule {
	r, err := ratelimit.ParseRule("100/day@Europe/Berlin")
	if err != nil {
		panic(err)
	}
	return r
}()

func newEnv(t *testing.T, b backend) *env {
	t.Helper()
	ctx := context.Background()
	pool, err := sql.Open(b.driver, b.dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	pool.SetMaxOpenConns(4)
	t.Cleanup(func() { pool.Close() })
	s := suffix(t)
	db, err := sluicesql.Open(pool, b.dialect, core.WithNaming(core.Naming{Tables: map[string]string{
		core.ModelRateLimit:    "op_rate_limit_" + s,
		core.ModelAPIKey:       "op_apikey_" + s,
		core.ModelRerolledKey:  "op_rerolled_key_" + s,
		core.ModelAPIKeyLimit:  "op_apikey_limit_" + s,
		core.ModelAPIKeyRefill: "op_apikey_refill_" + s,
	}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, tb := range db.Schema().Tables() {
			if _, err := pool.Exec("DROP TABLE IF EXISTS " + tb.Name); err != nil {
				t.Errorf("dropping %s: %v", tb.Name, err)
			}
		}
	})
	if err := db.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	e := &env{db: db, rec: operator.NewRecorder(), clock: &clock{now: time.Now().UTC().Truncate(time.Millisecond)}, log: &bytes.Buffer{}, logMu: &sync.Mutex{}}
	if e.keys, err = apikey.New(db, apikey.WithClock(e.clock.Now), apikey.WithObserver(e.rec.ObserveKeys)); err != nil {
		t.Fatal(err)
	}
	if e.limiter, err = ratelimit.New(ratelimit.Database(db), ratelimit.WithClock(e.clock.Now), ratelimit.WithObserver(e.rec.ObserveLimits)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.limiter.Close() })
	h, err := operator.New(operator.Config{
		Keys: e.keys, Authorize: operator.BearerToken("alice", token),
		Limiter: e.limiter, Rules: map[string]ratelimit.Rule{"hello": hello, "daily": daily},
		Recorder: e.rec, Clock: e.clock.Now, LiveInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(lockedWriter{e.logMu, e.log}, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(h)
	t.Cleanup(e.srv.Close)
	return e
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (e *env) logText() string {
	e.logMu.Lock()
	defer e.logMu.Unlock()
	return e.log.String()
}

func suffix(t testing.TB) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// reply is an answer with its body, raw and decoded.
type reply struct {
	status int
	header http.Header
	raw    string
	body   map[string]any
}

// call sends method path with body (JSON text, "" for none) and the
// operator token, as the sluice command would.
func (e *env) call(t *testing.T, method, path, body string) reply {
	t.Helper()
	return e.send(t, method, path, body, http.Header{"Authorization": {"Bearer " + token}})
}

func (e *env) send(t *testing.T, method, path, body string, h http.Header) reply {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if len(raw) > 0 && strings.Contains(resp.Header.Get("Content-Type"), "json") {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
	return r
}

// ok fails unless the call answered 200.
func (r reply) ok(t *testing.T) reply {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", r.status, r.raw)
	}
	return r
}

func (r reply) id(t *testing.T) int64 {
	t.Helper()
	f, ok := r.body["id"].(float64)
	if !ok {
		t.Fatalf("no id in %s", r.raw)
	}
	return int64(f)
}

func (r reply) str(key string) string { s, _ := r.body[key].(string); return s }

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func q(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return "?" + v.Encode()
}
