// Package operator is the face sluice shows the people who run a service:
// a key-management HTTP API and a web console over an [apikey.Manager],
// with the rate limits of a [ratelimit.Limiter] beside them.
//
// [New] returns an [http.Handler] to mount under a path of the service's
// choosing (strip the path first):
//
//	h, err := operator.New(operator.Config{Keys: keys, Authorize: operator.BearerToken("operator", token)})
//	mux.Handle("/operator/", http.StripPrefix("/operator", h))
//
// The API follows Better Auth's api-key endpoints where they overlap
// (POST /api-key/create, GET /api-key/get, GET /api-key/list,
// POST /api-key/update, POST /api-key/delete, POST /api-key/verify) and
// adds POST /api-key/reroll, GET /api-key/events, GET /rate-limit/get,
// POST /rate-limit/reset and GET /live (server-sent events of decisions
// per second). GET /openapi.json describes every route, generated from
// the same definitions the handler serves; GET / is the console.
//
// Every API route asks the [Authorizer] first, before it reads a body, and
// a change (any method but GET) must come from the same origin as the
// page that sends it: a request whose Origin or Sec-Fetch-Site says
// otherwise is refused, so no other site can make a signed-in browser
// change anything. Bodies are bounded ([MaxBodyBytes]) and unknown fields
// refused; a bad request is answered with RFC 9457 problem details whose
// "field" names the JSON field at fault. A key's secret appears in the
// answer of create and reroll only, and its hash never: not in an answer,
// a log line or an event.
//
// Changes go through the Manager, which tells its observer ([apikey.WithObserver])
// with the request's context: [ActorFrom] names who made them. A [Recorder]
// given to the manager and to [Config] keeps each key's recent changes
// with their actors and counts decisions for the live view.
package operator
