// Package server is sluice's demo server: an HTTP service whose routes are
// limited per client IP and protected by API keys with a quota, a refill
// and a per-key rate limit, on the ORM and database of your choice, plus a
// burst client that shows that the limits are exact under concurrency.
//
// The command in the parent folder (go run ./examples/demo) only parses
// flags; everything it runs is here, so that tests build the same server
// with an injected clock and drive it over real HTTP.
//
// # Routes
//
//   - GET /hello: limited per client IP (default 5 requests per 10 s) by
//     sluicehttp.RateLimit, with RateLimit-* headers, and 429 with
//     Retry-After and a JSON body once the window is full.
//   - POST /keys: creates an API key and returns its plaintext once. The
//     optional JSON body sets its quota, refill and rate limit (see
//     [KeyRequest]). Limited per client IP too (default 20 per minute).
//   - GET /api/data: needs a key in the x-api-key header; each request
//     spends one unit of the key's quota and of its rate limit, in one
//     guarded write, through sluicehttp.APIKey.
//   - GET /metrics: the decisions and verifications counted by outcome,
//     with their durations and round trips, in the Prometheus text format.
//   - POST /api/data: the same, for a key holding the permission
//     data:write (create it with "permissions":{"data":["write"]}); any
//     other key answers 403 INSUFFICIENT_PERMISSIONS and spends nothing.
//   - GET /usage: each key's verifications since the server started, valid
//     and denied by code, counted from the API-key events
//     (apikey.WithObserver), as usage analytics would be.
//   - GET /: what to try, as plain text.
//
// # Logs
//
// Every rate-limit decision and API-key verification is logged on
// [Config].Logger: Debug when admitted, Info when denied, Error on a
// storage error. The rate-limit key, which holds the client's IP address,
// appears only as a keyed hash; API keys never appear.
package server
