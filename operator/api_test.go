package operator_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// TestKeyLifecycle walks one key through every key endpoint and checks,
// from Go, that each change is what verification then sees.
func TestKeyLifecycle(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		created := e.call(t, "POST", "/api-key/create", `{"referenceId":"u1","name":"first","prefix":"sk_","remaining":3,
			"rateLimitEnabled":false,"permissions":{"data":["read"]},"metadata":{"plan":"pro"}}`).ok(t)
		secret, id := created.str("key"), created.id(t)
		if !strings.HasPrefix(secret, "sk_") || created.str("start") != secret[:apikey.StartLength] {
			t.Fatalf("secret %q, start %q", secret, created.str("start"))
		}
		if _, has := created.body["hash"]; has {
			t.Fatalf("create answered the hash: %s", created.raw)
		}
		if created.body["remaining"] != 3.0 || created.body["rateLimitEnabled"] != false || created.str("referenceId") != "u1" {
			t.Fatalf("created %s", created.raw)
		}

		// The key created through the API verifies from Go.
		r, err := e.keys.Verify(ctx, secret, apikey.Permissions(map[string][]string{"data": {"read"}}))
		if err != nil || !r.Valid || r.Key.ID != id {
			t.Fatalf("Go verification of the API's key: %+v, %v", r, err)
		}
		got := e.call(t, "GET", "/api-key/get"+q("id", strconv.FormatInt(id, 10)), "").ok(t)
		if got.body["remaining"] != 2.0 || got.body["metadata"].(map[string]any)["plan"] != "pro" {
			t.Fatalf("get after one verification: %s", got.raw)
		}

		// Through the API's verify until the quota runs out.
		for i, want := range []bool{true, true, false} {
			v := e.call(t, "POST", "/api-key/verify", jsonOf(t, map[string]any{"key": secret})).ok(t)
			if v.body["valid"] != want {
				t.Fatalf("verification %d: %s", i+2, v.raw)
			}
			if !want && v.body["error"].(map[string]any)["code"] != string(apikey.CodeUsageExceeded) {
				t.Fatalf("exhausted key: %s", v.raw)
			}
		}

		up := e.call(t, "POST", "/api-key/update", jsonOf(t, map[string]any{"keyId": id, "name": "renamed", "enabled": false, "remaining": 5})).ok(t)
		if up.str("name") != "renamed" || up.body["enabled"] != false || up.body["remaining"] != 5.0 {
			t.Fatalf("update: %s", up.raw)
		}
		if r, _ := e.keys.Verify(ctx, secret); r.Code != apikey.CodeDisabled {
			t.Fatalf("disabled through the API, Go sees %+v", r)
		}
		e.call(t, "POST", "/api-key/update", jsonOf(t, map[string]any{"keyId": id, "enabled": true})).ok(t)
		if un := e.call(t, "POST", "/api-key/update", jsonOf(t, map[string]any{"keyId": id, "remaining": nil})).ok(t); un.body["remaining"] != nil {
			t.Fatalf("remaining null should make the key unlimited: %s", un.raw)
		}

		rr := e.call(t, "POST", "/api-key/reroll", jsonOf(t, map[string]any{"keyId": id})).ok(t)
		fresh := rr.str("key")
		if fresh == secret || !strings.HasPrefix(fresh, "sk_") || rr.id(t) != id {
			t.Fatalf("reroll: %s", rr.raw)
		}
		if r, _ := e.keys.Verify(ctx, secret); r.Code != apikey.CodeInvalid {
			t.Fatalf("the old secret after a reroll without grace: %+v", r)
		}
		if r, _ := e.keys.Verify(ctx, fresh); !r.Valid {
			t.Fatalf("the new secret: %+v", r)
		}

		e.call(t, "POST", "/api-key/delete", jsonOf(t, map[string]any{"keyId": id})).ok(t)
		if r, _ := e.keys.Verify(ctx, fresh); r.Code != apikey.CodeInvalid {
			t.Fatalf("a deleted key verifies: %+v", r)
		}
		if g := e.call(t, "GET", "/api-key/get"+q("id", strconv.FormatInt(id, 10)), ""); g.status != http.StatusNotFound {
			t.Fatalf("get of a deleted key: %d %s", g.status, g.raw)
		}
		if d := e.call(t, "POST", "/api-key/delete", jsonOf(t, map[string]any{"keyId": id})); d.status != http.StatusNotFound || d.str("field") != "keyId" {
			t.Fatalf("second delete: %d %s", d.status, d.raw)
		}

		ev := e.call(t, "GET", "/api-key/events"+q("id", strconv.FormatInt(id, 10)), "").ok(t)
		var kinds []string
		for _, x := range ev.body["events"].([]any) {
			m := x.(map[string]any)
			if m["actor"] != "alice" {
				t.Errorf("event %v: actor %v, want alice", m["kind"], m["actor"])
			}
			kinds = append(kinds, m["kind"].(string))
		}
		want := []string{"deleted", "rerolled", "updated", "updated", "updated", "created"}
		if !slices.Equal(kinds, want) {
			t.Errorf("events %v, want %v", kinds, want)
		}
	})
}

// TestGoKeyVerifiesThroughAPI: a key made in Go is seen, verified and
// spent through the API.
func TestGoKeyVerifiesThroughAPI(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		secret, k, err := e.keys.Create(context.Background(), apikey.CreateParams{ReferenceID: "go", Remaining: ptr(int64(1))})
		if err != nil {
			t.Fatal(err)
		}
		v := e.call(t, "POST", "/api-key/verify", jsonOf(t, map[string]any{"key": secret})).ok(t)
		if v.body["valid"] != true || v.body["key"].(map[string]any)["id"] != float64(k.ID) || v.body["key"].(map[string]any)["remaining"] != 0.0 {
			t.Fatalf("verify of a key made in Go: %s", v.raw)
		}
		if r, _ := e.keys.Verify(context.Background(), secret); r.Code != apikey.CodeUsageExceeded {
			t.Fatalf("the API's verification did not spend the quota: %+v", r)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func TestListFiltersAndPages(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		for _, k := range []string{
			`{"referenceId":"u","name":"a","prefix":"sk_","expiresIn":3600}`,
			`{"referenceId":"u","name":"b","prefix":"sk_","enabled":false}`,
			`{"referenceId":"u","name":"c","prefix":"pk_","expiresIn":86400}`,
			`{"referenceId":"v","name":"d","prefix":"sk_"}`,
			`{"referenceId":"v","name":"e","prefix":"pk_","enabled":false,"expiresIn":7200}`,
		} {
			e.call(t, "POST", "/api-key/create", k).ok(t)
		}
		names := func(r reply) []string {
			var out []string
			for _, k := range r.body["apiKeys"].([]any) {
				out = append(out, k.(map[string]any)["name"].(string))
			}
			return out
		}
		for _, c := range []struct {
			query string
			want  []string
		}{
			{"", []string{"a", "b", "c", "d", "e"}},
			{q("referenceId", "v"), []string{"d", "e"}},
			{q("prefix", "pk_"), []string{"c", "e"}},
			{q("enabled", "true"), []string{"a", "c", "d"}},
			{q("enabled", "false", "referenceId", "u"), []string{"b"}},
			{q("expiringWithin", "10800"), []string{"a", "e"}},
		} {
			r := e.call(t, "GET", "/api-key/list"+c.query, "").ok(t)
			if got := names(r); !slices.Equal(got, c.want) || r.body["nextCursor"] != nil {
				t.Errorf("list%s = %v (next %v), want %v", c.query, got, r.body["nextCursor"], c.want)
			}
		}
		var all []string
		cursor := "0"
		for pages := 0; ; pages++ {
			r := e.call(t, "GET", "/api-key/list"+q("limit", "2", "cursor", cursor), "").ok(t)
			all = append(all, names(r)...)
			next, ok := r.body["nextCursor"].(float64)
			if !ok {
				if pages != 2 {
					t.Errorf("%d pages of 2 for 5 keys", pages+1)
				}
				break
			}
			cursor = strconv.FormatInt(int64(next), 10)
		}
		if !slices.Equal(all, []string{"a", "b", "c", "d", "e"}) {
			t.Errorf("paged through %v", all)
		}
	})
}

// TestUpdateInParts: a refill or rate limit given in part keeps the rest;
// named limits, expiry and metadata are set and cleared.
func TestUpdateInParts(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.call(t, "POST", "/api-key/create", `{"referenceId":"u","remaining":10,"refillInterval":60000,"refillAmount":10,
			"rateLimitTimeWindow":1000,"rateLimitMax":5,"metadata":{"a":1},"limits":{"tokens":{"max":100,"timeWindow":60000}}}`).ok(t)
		id := c.id(t)
		if c.body["limits"].(map[string]any)["tokens"].(map[string]any)["max"] != 100.0 {
			t.Fatalf("create with limits: %s", c.raw)
		}
		u := e.call(t, "POST", "/api-key/update", jsonOf(t, map[string]any{"keyId": id, "refillAmount": 20, "rateLimitMax": 7,
			"expiresIn": 60, "metadata": map[string]any{}, "limits": map[string]any{}})).ok(t)
		if u.body["refillInterval"] != 60000.0 || u.body["refillAmount"] != 20.0 || u.body["rateLimitTimeWindow"] != 1000.0 || u.body["rateLimitMax"] != 7.0 {
			t.Errorf("partial refill and rate limit: %s", u.raw)
		}
		exp, _ := time.Parse(time.RFC3339Nano, u.str("expiresAt"))
		if want := e.clock.Now().Add(time.Minute); !exp.Equal(want) {
			t.Errorf("expiresAt %v, want %v", exp, want)
		}
		if len(u.body["metadata"].(map[string]any)) != 0 || len(u.body["limits"].(map[string]any)) != 0 {
			t.Errorf("{} should clear metadata and limits: %s", u.raw)
		}
		u = e.call(t, "POST", "/api-key/update", jsonOf(t, map[string]any{"keyId": id, "expiresIn": nil, "rateLimitEnabled": false,
			"refillInterval": 0, "refillAmount": 0, "resetRateLimit": true})).ok(t)
		if u.body["expiresAt"] != nil || u.body["rateLimitEnabled"] != false || u.body["refillInterval"] != nil {
			t.Errorf("clearing expiry, rate limit and refill: %s", u.raw)
		}
	})
}

func TestRateLimitState(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		for range 2 {
			if _, err := e.limiter.Consume(ctx, "203.0.113.7", hello); err != nil {
				t.Fatal(err)
			}
		}
		st := e.call(t, "GET", "/rate-limit/get"+q("rule", "hello", "key", "203.0.113.7"), "").ok(t)
		if st.body["remaining"] != 1.0 || st.body["max"] != 3.0 || st.body["allowed"] != true {
			t.Fatalf("state after two requests: %s", st.raw)
		}
		e.call(t, "POST", "/rate-limit/reset", `{"rule":"hello","key":"203.0.113.7"}`).ok(t)
		d, err := e.limiter.Check(ctx, "203.0.113.7", hello)
		if err != nil || d.Remaining != 3 {
			t.Fatalf("after reset the limiter reports %+v, %v", d, err)
		}
		rules := e.call(t, "GET", "/rate-limit/rules", "").ok(t)
		if rules.raw != `{"rules":[{"name":"daily","max":100,"timeWindow":0,"calendar":"day@Europe/Berlin"},{"name":"hello","max":3,"timeWindow":10000}]}`+"\n" {
			t.Errorf("rules: %s", rules.raw)
		}
		// A calendar rule's window ends at the next midnight in its zone.
		st = e.call(t, "GET", "/rate-limit/get"+q("rule", "daily", "key", "203.0.113.7"), "").ok(t)
		_, end := ratelimit.Day.Period(e.clock.Now(), daily.Location)
		if st.body["calendar"] != "day@Europe/Berlin" || st.body["reset"] != end.UTC().Format(time.RFC3339Nano) {
			t.Errorf("a calendar rule's state: %s, want reset %v", st.raw, end.UTC())
		}
	})
}

// TestLive reads the live view while verifications happen and sees them
// counted, allowed against denied.
func TestLive(t *testing.T) {
	e := newEnv(t, backends[0])
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	secret, k, err := e.keys.Create(ctx, apikey.CreateParams{ReferenceID: "u", Remaining: ptr(int64(2)), RateLimit: &apikey.RateLimit{}})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/live"+q("keyId", strconv.FormatInt(k.ID, 10)), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	next := func() map[string]any {
		for lines.Scan() {
			if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				var m map[string]any
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					t.Fatal(err)
				}
				return m
			}
		}
		t.Fatalf("stream ended: %v", lines.Err())
		return nil
	}
	if first := next(); first["totalAllowed"] != 0.0 || first["totalDenied"] != 0.0 {
		t.Fatalf("first sample %v", first)
	}
	for range 3 { // two allowed, the third exhausted
		if _, err := e.keys.Verify(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	var rate float64
	for i := 0; ; i++ {
		if i == 500 {
			t.Fatal("500 samples without the three verifications counted")
		}
		s := next()
		rate += s["allowed"].(float64)
		if s["totalAllowed"] == 2.0 && s["totalDenied"] == 1.0 {
			break
		}
	}
	if rate <= 0 {
		t.Errorf("allowed per second never rose above 0")
	}
}
