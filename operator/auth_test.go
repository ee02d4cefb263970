package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
	"github.com/sluice-go/sluice/operator"
)

// validRequests holds, for every route, a request that would succeed
// (and, for a change, change something) if it were admitted.
func validRequests(id int64, secret string) map[string]string {
	return map[string]string{
		"POST /api-key/create":   `{"referenceId":"mallory","remaining":1000000}`,
		"GET /api-key/get":       fmt.Sprintf("?id=%d", id),
		"GET /api-key/list":      "",
		"POST /api-key/update":   fmt.Sprintf(`{"keyId":%d,"remaining":1000000,"enabled":true}`, id),
		"POST /api-key/reroll":   fmt.Sprintf(`{"keyId":%d}`, id),
		"POST /api-key/delete":   fmt.Sprintf(`{"keyId":%d}`, id),
		"POST /api-key/verify":   fmt.Sprintf(`{"key":%q}`, secret),
		"GET /api-key/events":    fmt.Sprintf("?id=%d", id),
		"GET /rate-limit/rules":  "",
		"GET /rate-limit/get":    "?rule=hello&key=203.0.113.9",
		"POST /rate-limit/reset": `{"rule":"hello","key":"203.0.113.9"}`,
		"GET /live":              "",
	}
}

// documentedRoutes lists "METHOD /path" of every operation in the
// OpenAPI document.
func documentedRoutes(t *testing.T) []string {
	t.Helper()
	var out []string
	for path, item := range operator.OpenAPI()["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			out = append(out, strings.ToUpper(method)+" "+path)
		}
	}
	sort.Strings(out)
	return out
}

// TestRefusalsChangeNothing sends every route's request without a token,
// with a wrong one, and (for changes) from another origin with the right
// one: each is refused, and afterwards the keys, their counters and the
// rate-limit counters are exactly as before.
func TestRefusalsChangeNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		secret, k, err := e.keys.Create(ctx, apikey.CreateParams{ReferenceID: "u", Remaining: ptr(int64(5)), Disabled: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.limiter.Consume(ctx, "203.0.113.9", hello); err != nil {
			t.Fatal(err)
		}
		before := e.snapshot(t)
		reqs := validRequests(k.ID, secret)
		refusals := []struct {
			name   string
			header http.Header
			status int
			change bool // only sent to routes that change something
		}{
			{"no token", http.Header{}, 401, false},
			{"wrong token", http.Header{"Authorization": {"Bearer " + token + "x"}}, 401, false},
			{"token not as bearer", http.Header{"Authorization": {token}}, 401, false},
			{"empty bearer", http.Header{"Authorization": {"Bearer "}}, 401, false},
			{"other origin", http.Header{"Authorization": {"Bearer " + token}, "Origin": {"https://evil.example"}}, 403, true},
			{"cross-site fetch", http.Header{"Authorization": {"Bearer " + token}, "Sec-Fetch-Site": {"cross-site"}}, 403, true},
			{"same-site fetch", http.Header{"Authorization": {"Bearer " + token}, "Sec-Fetch-Site": {"same-site"}}, 403, true},
		}
		for _, route := range documentedRoutes(t) {
			body, ok := reqs[route]
			if !ok {
				t.Fatalf("no request for %s", route)
			}
			method, path, _ := strings.Cut(route, " ")
			if method == "GET" {
				path, body = path+body, ""
			}
			for _, ref := range refusals {
				if ref.change && method == "GET" {
					continue
				}
				r := e.send(t, method, path, body, ref.header)
				if r.status != ref.status {
					t.Errorf("%s, %s: %d, want %d: %s", route, ref.name, r.status, ref.status, r.raw)
				}
				if ref.status == 401 && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("%s, %s: no WWW-Authenticate: Bearer", route, ref.name)
				}
				if strings.Contains(r.raw, k.Hash) || strings.Contains(r.raw, "mallory") {
					t.Errorf("%s, %s: the refusal tells of the data: %s", route, ref.name, r.raw)
				}
			}
		}
		if after := e.snapshot(t); after != before {
			t.Errorf("refused requests changed the data:\nbefore %s\nafter  %s", before, after)
		}
		// The same requests, admitted, do change it: the refusals were not
		// answered by requests that could not have changed anything.
		e.call(t, "POST", "/api-key/update", reqs["POST /api-key/update"]).ok(t)
		e.send(t, "POST", "/rate-limit/reset", reqs["POST /rate-limit/reset"], http.Header{
			"Authorization": {"Bearer " + token}, "Origin": {e.srv.URL}, "Sec-Fetch-Site": {"same-origin"}}).ok(t)
		if after := e.snapshot(t); after == before {
			t.Error("admitted changes left the data as it was")
		}
	})
}

// snapshot is every key as stored (hash and counters included) and the
// rate-limit counter the refusals aimed at, as text.
func (e *env) snapshot(t *testing.T) string {
	t.Helper()
	keys, _, err := e.keys.Search(context.Background(), apikey.Filter{}, 0, apikey.MaxPageSize)
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.limiter.Check(context.Background(), "203.0.113.9", hello)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"keys": keys, "remaining": d.Remaining})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewRefusesWithoutAuthorizer(t *testing.T) {
	db, err := core.New(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	keys, err := apikey.New(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg  operator.Config
		want string
	}{
		{operator.Config{Keys: keys}, "Authorize"},
		{operator.Config{Authorize: operator.BearerToken("a", "t")}, "Keys"},
		{operator.Config{Keys: keys, Authorize: operator.BearerToken("a", "t"), Rules: map[string]ratelimit.Rule{"x": hello}}, "Limiter"},
	} {
		if h, err := operator.New(c.cfg); err == nil || h != nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, %v; want an error naming %s", c.cfg, h, err, c.want)
		}
	}
}

func TestBearerToken(t *testing.T) {
	auth := operator.BearerToken("ops", "s3cret")
	for _, c := range []struct {
		header string
		ok     bool
	}{
		{"Bearer s3cret", true},
		{"Bearer s3cre", false},
		{"Bearer s3cretx", false},
		{"bearer s3cret", false},
		{"s3cret", false},
		{"", false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		actor, err := auth(r)
		if (err == nil) != c.ok || (c.ok && actor != "ops") {
			t.Errorf("Authorization %q: actor %q, %v", c.header, actor, err)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer ")
	if _, err := operator.BearerToken("ops", "")(r); err == nil {
		t.Error("an empty token admitted an empty bearer")
	}
}

// TestSecretsStayOut: across a key's life, its secret appears only in
// the answers of create and reroll, its hash in no answer, and neither in
// the log nor the events.
func TestSecretsStayOut(t *testing.T) {
	e := newEnv(t, backends[0])
	c := e.call(t, "POST", "/api-key/create", `{"referenceId":"u","remaining":5}`).ok(t)
	secret, id := c.str("key"), c.id(t)
	hash := keystore.Hash(secret)
	var answers []reply
	for _, call := range []struct{ method, path, body string }{
		{"GET", fmt.Sprintf("/api-key/get?id=%d", id), ""},
		{"GET", "/api-key/list", ""},
		{"POST", "/api-key/verify", fmt.Sprintf(`{"key":%q}`, secret)},
		{"POST", "/api-key/verify", fmt.Sprintf(`{"key":%q}`, secret+"x")},
		{"POST", "/api-key/update", fmt.Sprintf(`{"keyId":%d,"name":"n"}`, id)},
		{"GET", fmt.Sprintf("/api-key/events?id=%d", id), ""},
	} {
		answers = append(answers, e.call(t, call.method, call.path, call.body).ok(t))
	}
	rr := e.call(t, "POST", "/api-key/reroll", fmt.Sprintf(`{"keyId":%d}`, id)).ok(t)
	fresh := rr.str("key")
	answers = append(answers, e.call(t, "GET", fmt.Sprintf("/api-key/get?id=%d", id), "").ok(t))
	for _, s := range []string{c.raw, rr.raw} {
		if strings.Contains(s, hash) || strings.Contains(s, keystore.Hash(fresh)) {
			t.Errorf("a hash in %s", s)
		}
	}
	for _, a := range answers {
		for _, leak := range []string{secret, hash, fresh, keystore.Hash(fresh)} {
			if strings.Contains(a.raw, leak) {
				t.Errorf("%q in an answer: %s", leak, a.raw)
			}
		}
	}
	log := e.logText()
	if !strings.Contains(log, "/api-key/create") || !strings.Contains(log, "actor=alice") {
		t.Fatalf("the log lacks the requests: %s", log)
	}
	for _, leak := range []string{secret, hash, fresh, keystore.Hash(fresh)} {
		if strings.Contains(log, leak) {
			t.Errorf("%q in the log", leak)
		}
	}
}
