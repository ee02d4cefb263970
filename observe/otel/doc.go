// Package sluiceotel records sluice's rate-limit decisions and API-key
// verifications as OpenTelemetry metrics and, optionally, spans.
//
// It builds on the observer hooks of the core: [RateLimitObserver] returns
// a function for ratelimit.WithObserver, [APIKeyObserver] one for
// apikey.WithObserver.
//
//	observe, err := sluiceotel.RateLimitObserver()
//	if err != nil { … }
//	limiter, err := ratelimit.New(storage, ratelimit.WithObserver(observe))
//
// # Metrics
//
// Rate limiting, one measurement of each per decision (Consume, ConsumeN,
// Check):
//
//	sluice.ratelimit.decisions             counter    {decision}   decisions
//	sluice.ratelimit.cost                  counter    {unit}       units asked for (ConsumeN's n; 0 for Check)
//	sluice.ratelimit.decision.duration     histogram  s            how long a decision took
//	sluice.ratelimit.decision.round_trips  histogram  {round_trip} statements or commands sent to the storage
//
// with the attributes sluice.outcome ("allowed", "denied", "shadow",
// "error"; "shadow": admitted, but a shadow rule would have denied),
// sluice.ratelimit.mode ("FixedWindow", "BetterAuthWindow",
// "SlidingWindow", "GCRA"), sluice.ratelimit.rule (the rule as
// ratelimit.ParseRule reads it, such as "100-M"), sluice.ratelimit.rule.name
// (the binding rule's Name: the rule of a policy that denied, or the one
// with the fewest remaining; "default" for a lone unnamed rule),
// sluice.ratelimit.shadow (true when a shadow rule would have denied:
// Decision.WouldDeny), sluice.storage ("database", "secondary", "memory")
// and, on errors only, error.type.
//
// API keys, one measurement of each per Verify:
//
//	sluice.apikey.verifications                counter    {verification}
//	sluice.apikey.verification.duration        histogram  s
//	sluice.apikey.verification.round_trips     histogram  {round_trip}
//
// with sluice.outcome ("valid", the denial's code such as "RATE_LIMITED",
// or "error"), sluice.storage ("database", "database+cache", "storage")
// and, on errors only, error.type. And one count per key changed:
//
//	sluice.apikey.changes                      counter    {key}
//
// with sluice.apikey.change ("created", "updated", "deleted",
// "expired_deleted") and sluice.storage.
//
// The duration histograms' buckets run from 50µs (an in-memory decision)
// to 5s: 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
// 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5; the round trips' are 0, 1, 2, 3,
// 4, 5, 6, 8, 10, 15, 20, the first counting the events that sent nothing
// to a server (a denial from the denial cache, Memory storage). An SDK
// view can change them.
//
// error.type is one of "invalid", "schema", "contention", "unsupported",
// "not_found", "canceled", "deadline_exceeded" (the core's sentinel errors
// and the context's) or "_OTHER": never the error's text.
//
// Every attribute takes few values, fixed by the program's configuration:
// the rate-limit key (an IP address, a user id) and the API key are
// chosen by clients and are never an attribute of a metric, which would
// make one time series per client. [WithAttributes] adds constant
// attributes, such as the name of the limiter when a program has several.
//
// # Spans
//
// With [WithSpans], each event whose context carries a span (an HTTP
// server span, say) also becomes a child span of it, named
// "sluice.ratelimit.decision" or "sluice.apikey.verify", created after the
// fact with the event's own start and end times. It carries the metrics'
// attributes and the event's details (cost, remaining, retry-after, round
// trips; the API key's numeric id), and on an error the error's text as
// its status, with the error recorded as an exception event. A denial is
// not an error. Events without a span in their context make no span: a
// root span per decision would be noise. [WithKeyInSpans] adds the
// rate-limit key to the spans (never to metrics); it is off by default
// because keys are often personal data such as client IP addresses.
//
// The providers default to the global ones (otel.GetMeterProvider and
// otel.GetTracerProvider) at the time the observer is built; see
// [WithMeterProvider] and [WithTracerProvider].
package sluiceotel
