package operator

import (
	"context"
	"net/http"
	"reflect"
	"strconv"
	"strings"
)

// route is one API endpoint: what the handler serves and what the OpenAPI
// document says of it, from the same definition.
type route struct {
	method, path, id, summary string
	in, out                   reflect.Type // in: the body (POST) or the query (GET)
	status                    int          // of success
	stream                    bool         // text/event-stream instead of JSON
	serve                     func(h *Handler, w http.ResponseWriter, r *http.Request)
}

// endpoint makes a JSON route of fn: In is decoded from the body of a POST
// or the query of a GET, Out is the answer.
func endpoint[In, Out any](method, path, id, summary string, fn func(h *Handler, ctx context.Context, in In) (Out, error)) route {
	return route{
		method: method, path: path, id: id, summary: summary,
		in: reflect.TypeFor[In](), out: reflect.TypeFor[Out](), status: http.StatusOK,
		serve: func(h *Handler, w http.ResponseWriter, r *http.Request) {
			var in In
			var err error
			if method == http.MethodGet {
				err = decodeQuery(r, &in)
			} else {
				err = decodeBody(w, r, &in)
			}
			if err != nil {
				writeProblem(w, err, nil)
				return
			}
			out, err := fn(h, r.Context(), in)
			if err != nil {
				writeProblem(w, err, fieldsOf[path])
				return
			}
			writeJSON(w, http.StatusOK, out)
		},
	}
}

// routes is the API. The OpenAPI document lists exactly these.
var routes = []route{
	endpoint(http.MethodPost, "/api-key/create", "createApiKey", "Create a key; the answer holds its secret, this once", (*Handler).create),
	endpoint(http.MethodGet, "/api-key/get", "getApiKey", "A key by id", (*Handler).get),
	endpoint(http.MethodGet, "/api-key/list", "listApiKeys", "Keys in id order, a page at a time, filtered", (*Handler).list),
	endpoint(http.MethodPost, "/api-key/update", "updateApiKey", "Change a key", (*Handler).update),
	endpoint(http.MethodPost, "/api-key/reroll", "rerollApiKey", "Give a key a new secret, the old one working for a grace period", (*Handler).reroll),
	endpoint(http.MethodPost, "/api-key/delete", "deleteApiKey", "Delete (revoke) a key: it stops verifying at once", (*Handler).delete),
	endpoint(http.MethodPost, "/api-key/verify", "verifyApiKey", "Verify a key, spending its quota and rate limit as a request would", (*Handler).verify),
	endpoint(http.MethodGet, "/api-key/events", "apiKeyEvents", "A key's recent changes, with who made them", (*Handler).events),
	endpoint(http.MethodGet, "/rate-limit/rules", "rateLimitRules", "The rules whose counters the API can show and reset", (*Handler).rules),
	endpoint(http.MethodGet, "/rate-limit/get", "getRateLimit", "A rate-limit key's state under a rule, without spending anything", (*Handler).limitGet),
	endpoint(http.MethodPost, "/rate-limit/reset", "resetRateLimit", "Clear a rate-limit key's counter under a rule", (*Handler).limitReset),
	{
		method: http.MethodGet, path: "/live", id: "live", summary: "Decisions per second, allowed and denied, as server-sent events (one liveSample a LiveInterval)",
		in: reflect.TypeFor[liveQuery](), out: reflect.TypeFor[liveSample](), status: http.StatusOK, stream: true,
		serve: (*Handler).live,
	},
}

// decodeQuery fills the fields of v (a pointer to a struct) from r's query
// by their query tags: strings, integers and *bool or *int64 for optional
// ones. An unknown parameter, a repeated one or a malformed value is a
// problem naming the parameter.
func decodeQuery(r *http.Request, v any) error {
	q := r.URL.Query()
	rv := reflect.ValueOf(v).Elem()
	known := map[string]bool{}
	for i := 0; i < rv.NumField(); i++ {
		name := rv.Type().Field(i).Tag.Get("query")
		known[name] = true
		vals, ok := q[name]
		if !ok {
			continue
		}
		if len(vals) > 1 {
			return fieldError(name, "is given %d times", len(vals))
		}
		if err := setQueryValue(rv.Field(i), vals[0]); err != nil {
			return fieldError(name, "%v", err)
		}
	}
	for name := range q {
		if !known[name] {
			return fieldError(name, "is not a parameter of this request")
		}
	}
	return nil
}

func setQueryValue(f reflect.Value, s string) error {
	if f.Kind() == reflect.Pointer {
		p := reflect.New(f.Type().Elem())
		if err := setQueryValue(p.Elem(), s); err != nil {
			return err
		}
		f.Set(p)
		return nil
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(s)
	case reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return errNotInteger(s)
		}
		f.SetInt(n)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return errNotBool(s)
		}
		f.SetBool(b)
	}
	return nil
}

type errNotInteger string

func (e errNotInteger) Error() string { return "must be an integer, not " + strconv.Quote(string(e)) }

type errNotBool string

func (e errNotBool) Error() string { return "must be true or false, not " + strconv.Quote(string(e)) }

// queryNames lists the query parameters of a query struct type.
func queryNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		out = append(out, t.Field(i).Tag.Get("query"))
	}
	return out
}

// jsonName is the JSON name of a struct field and whether it may be left out.
func jsonName(f reflect.StructField) (name string, optional bool, skip bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false, true
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero"), false
}
