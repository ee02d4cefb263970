package server

import (
	"fmt"
	"strings"
)

// Banner is what the demo prints on start and serves at GET /: the shell
// commands to try against base, such as "http://127.0.0.1:8080".
func (s *Server) Banner(base string) string {
	h, k := s.cfg.Hello, s.cfg.Key
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("sluice demo: %s", s.Where())
	line("listening on %s", base)
	line("")
	line("Operator console: %s/operator/ (sign in with the token the server printed when it started)", base)
	line("")
	line("Try:")
	line("")
	line("  # 1. A route limited per client IP, %d requests per %v: request %d answers 429.", h.Max, h.Window, h.Max+1)
	line("  for i in $(seq %d); do curl -s -o /dev/null -D - %s/hello | grep -iE '^(HTTP|RateLimit|Retry-After)'; echo; done", h.Max+1, base)
	line("")
	line("  # 2. Create an API key: quota %d, refilled to %d every %v, at most %d requests per %v.",
		k.Quota, k.RefillAmount, k.RefillInterval, k.RateMax, k.RateWindow)
	line("  #    The plaintext key is shown once; the server stores only its hash.")
	line("  KEY=$(curl -s -X POST %s/keys | sed -E 's/.*\"key\":\"([^\"]+)\".*/\\1/'); echo $KEY", base)
	line("  #    Options: curl -s -X POST %s/keys -d '{\"quota\":2,\"refillEvery\":\"30s\",\"rateLimit\":10,\"rateLimitWindow\":\"1m\",\"expiresIn\":\"1h\"}'", base)
	line("")
	line("  # 3. Spend it: %d pass, then RATE_LIMITED, which spends no quota.", min(k.RateMax, k.Quota))
	line("  #    Wait %v and go on: the quota runs out (USAGE_EXCEEDED) until the refill.", k.RateWindow)
	line("  for i in $(seq %d); do curl -s %s/api/data -H \"x-api-key: $KEY\"; done", k.RateMax+1, base)
	line("")
	line("  # 4. Missing or bad keys answer 401.")
	line("  curl -s %s/api/data; curl -s %s/api/data -H 'x-api-key: sk_demo_nope'", base, base)
	line("")
	line("  # 5. 200 concurrent requests at once: exactly %d are admitted (wait %v first if you just ran 1).", h.Max, h.Window)
	line("  go run ./examples/demo burst -n 200 -url %s/hello", base)
	line("  go run ./examples/demo burst -n 50 -url %s/api/data -key \"$(curl -s -X POST %s/keys | sed -E 's/.*\"key\":\"([^\"]+)\".*/\\1/')\"", base, base)
	line("")
	line("  # 6. The decisions and verifications counted by outcome (Prometheus text format).")
	line("  curl -s %s/metrics | grep -E '^sluice_(ratelimit_decisions|apikey_verifications)_total'", base)
	line("")
	line("  # 7. Each key's usage, counted from the API-key events.")
	line("  curl -s %s/usage", base)
	line("")
	line("  # 8. Rotate the key: a new plaintext for the same record; the old one works for 30 s more.")
	line("  curl -s -X POST %s/keys/reroll -H \"x-api-key: $KEY\" -d '{\"grace\":\"30s\"}'", base)
	return b.String()
}
