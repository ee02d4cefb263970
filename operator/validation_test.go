package operator_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/operator"
)

// TestValidationErrors sends every kind of bad request each endpoint can
// get and checks the problem details: the status, and the field named.
func TestValidationErrors(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		id := e.call(t, "POST", "/api-key/create", `{"referenceId":"u","remaining":5}`).ok(t).id(t)
		k := func(body string) string { return fmt.Sprintf(`{"keyId":%d,%s}`, id, body) }
		long := strings.Repeat("n", 256)
		cases := []struct {
			method, path, body string
			status             int
			field              string
		}{
			{"POST", "/api-key/create", `{}`, 400, "referenceId"},
			{"POST", "/api-key/create", `{"referenceId":"` + strings.Repeat("r", 256) + `"}`, 400, "referenceId"},
			{"POST", "/api-key/create", `{"referenceId":"u","configId":"` + long + `"}`, 400, "configId"},
			{"POST", "/api-key/create", `{"referenceId":"u","name":"` + long + `"}`, 400, "name"},
			{"POST", "/api-key/create", `{"referenceId":"u","prefix":"sk live"}`, 400, "prefix"},
			{"POST", "/api-key/create", `{"referenceId":"u","expiresIn":-5}`, 400, "expiresIn"},
			{"POST", "/api-key/create", `{"referenceId":"u","expiresIn":0}`, 400, "expiresIn"},
			{"POST", "/api-key/create", `{"referenceId":"u","remaining":-1}`, 400, "remaining"},
			{"POST", "/api-key/create", `{"referenceId":"u","remaining":1,"refillInterval":1000}`, 400, "refillInterval"},
			{"POST", "/api-key/create", `{"referenceId":"u","remaining":1,"refillInterval":1000,"refillAmount":-1}`, 400, "refillAmount"},
			{"POST", "/api-key/create", `{"referenceId":"u","refillInterval":1000,"refillAmount":5}`, 400, "remaining"},
			{"POST", "/api-key/create", `{"referenceId":"u","remaining":1,"refillInterval":9000000000000000,"refillAmount":1}`, 400, "refillInterval"},
			{"POST", "/api-key/create", `{"referenceId":"u","rateLimitMax":5}`, 400, "rateLimitTimeWindow"},
			{"POST", "/api-key/create", `{"referenceId":"u","rateLimitTimeWindow":1000,"rateLimitMax":-1}`, 400, "rateLimitMax"},
			{"POST", "/api-key/create", `{"referenceId":"u","permissions":{"":["read"]}}`, 400, "permissions"},
			{"POST", "/api-key/create", `{"referenceId":"u","permissions":{"data":[""]}}`, 400, "permissions"},
			{"POST", "/api-key/create", `{"referenceId":"u","limits":{"bad name":{"max":1,"timeWindow":1000}}}`, 400, "limits"},
			{"POST", "/api-key/create", `{"referenceId":"u","limits":{"tokens":{"max":-1,"timeWindow":1000}}}`, 400, "limits"},
			{"POST", "/api-key/create", `{"referenceId":"u","limits":{"tokens":{"max":1,"timeWindow":0}}}`, 400, "limits"},
			{"POST", "/api-key/create", `{"referenceId":"u","colour":"red"}`, 400, "colour"},
			{"POST", "/api-key/create", `{"referenceId":5}`, 400, "referenceId"},
			{"POST", "/api-key/create", `{"referenceId":"u","remaining":"many"}`, 400, "remaining"},
			{"POST", "/api-key/create", `{"referenceId":"u","enabled":"yes"}`, 400, "enabled"},
			{"POST", "/api-key/create", `{"referenceId":"u","permissions":["data"]}`, 400, "permissions"},
			{"POST", "/api-key/create", `{"referenceId":`, 400, ""},
			{"POST", "/api-key/create", `{"referenceId":"u"}{}`, 400, ""},
			{"POST", "/api-key/create", ``, 400, ""},
			{"POST", "/api-key/create", `{"referenceId":"u","metadata":{"x":"` + strings.Repeat("x", operator.MaxBodyBytes) + `"}}`, 413, ""},

			{"GET", "/api-key/get", "", 400, "id"},
			{"GET", "/api-key/get" + q("id", "abc"), "", 400, "id"},
			{"GET", "/api-key/get?id=1&id=2", "", 400, "id"},
			{"GET", "/api-key/get" + q("id", "1", "colour", "red"), "", 400, "colour"},
			{"GET", "/api-key/get" + q("id", "999999"), "", 404, ""},

			{"GET", "/api-key/list" + q("limit", "1001"), "", 400, "limit"},
			{"GET", "/api-key/list" + q("limit", "-1"), "", 400, "limit"},
			{"GET", "/api-key/list" + q("cursor", "-1"), "", 400, "cursor"},
			{"GET", "/api-key/list" + q("enabled", "maybe"), "", 400, "enabled"},
			{"GET", "/api-key/list" + q("expiringWithin", "-1"), "", 400, "expiringWithin"},
			{"GET", "/api-key/list" + q("expiringWithin", "soon"), "", 400, "expiringWithin"},

			{"POST", "/api-key/update", `{"name":"x"}`, 400, "keyId"},
			{"POST", "/api-key/update", k(`"name":"` + long + `"`), 400, "name"},
			{"POST", "/api-key/update", k(`"remaining":-1`), 400, "remaining"},
			{"POST", "/api-key/update", k(`"remaining":"x"`), 400, "remaining"},
			{"POST", "/api-key/update", k(`"expiresIn":0`), 400, "expiresIn"},
			{"POST", "/api-key/update", k(`"refillInterval":1000`), 400, "refillInterval"},
			{"POST", "/api-key/update", k(`"rateLimitTimeWindow":0,"rateLimitMax":1`), 400, "rateLimitTimeWindow"},
			{"POST", "/api-key/update", k(`"rateLimitTimeWindow":1000,"rateLimitMax":-3`), 400, "rateLimitMax"},
			{"POST", "/api-key/update", k(`"permissions":{"":["x"]}`), 400, "permissions"},
			{"POST", "/api-key/update", k(`"limits":{"t":{"max":1,"timeWindow":-1}}`), 400, "limits"},
			{"POST", "/api-key/update", k(`"colour":"red"`), 400, "colour"},
			{"POST", "/api-key/update", fmt.Sprintf(`{"keyId":%d}`, id), 400, ""},
			{"POST", "/api-key/update", `{"keyId":999999,"name":"x"}`, 404, ""},

			{"POST", "/api-key/reroll", `{}`, 400, "keyId"},
			{"POST", "/api-key/reroll", k(`"gracePeriod":-1`), 400, "gracePeriod"},
			{"POST", "/api-key/reroll", `{"keyId":999999}`, 404, ""},
			{"POST", "/api-key/delete", `{}`, 400, "keyId"},
			{"POST", "/api-key/delete", `{"keyId":"one"}`, 400, "keyId"},
			{"POST", "/api-key/verify", `{}`, 400, "key"},
			{"GET", "/api-key/events", "", 400, "id"},

			{"GET", "/rate-limit/get" + q("key", "a"), "", 400, "rule"},
			{"GET", "/rate-limit/get" + q("rule", "nope", "key", "a"), "", 400, "rule"},
			{"GET", "/rate-limit/get" + q("rule", "hello"), "", 400, "key"},
			{"POST", "/rate-limit/reset", `{"key":"a"}`, 400, "rule"},
			{"POST", "/rate-limit/reset", `{"rule":"hello"}`, 400, "key"},
			{"GET", "/live" + q("rule", "nope"), "", 400, "rule"},
			{"GET", "/live" + q("keyId", "x"), "", 400, "keyId"},
		}
		for _, c := range cases {
			r := e.call(t, c.method, c.path, c.body)
			name := c.method + " " + c.path + " " + c.body
			if len(name) > 120 {
				name = name[:120]
			}
			if r.status != c.status || r.str("field") != c.field {
				t.Errorf("%s: %d field %q, want %d field %q: %s", name, r.status, r.str("field"), c.status, c.field, r.raw)
				continue
			}
			if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("%s: Content-Type %q", name, ct)
			}
			if r.body["status"] != float64(c.status) || r.str("type") != "about:blank" || r.str("title") != http.StatusText(c.status) || r.str("detail") == "" {
				t.Errorf("%s: not a problem details object: %s", name, r.raw)
			}
		}
		// None of them changed the key.
		got := e.call(t, "GET", "/api-key/get"+q("id", fmt.Sprint(id)), "").ok(t)
		if got.body["remaining"] != 5.0 || got.str("name") != "" {
			t.Errorf("bad requests changed the key: %s", got.raw)
		}
	})
}
