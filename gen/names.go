package gen

import (
	"go/token"
	"strings"
	"unicode"
)

// initialisms are the words Go spells in capitals (Effective Go, "MixedCaps";
// the list golint used), plus apikey, which reads as two words.
var initialisms = map[string]string{
	"api": "API", "apikey": "APIKey", "http": "HTTP", "id": "ID", "ip": "IP",
	"json": "JSON", "sql": "SQL", "ttl": "TTL", "uri": "URI", "url": "URL", "uuid": "UUID",
}

// words splits a logical name at case changes and underscores:
// rateLimitTimeWindow → rate, limit, time, window; userID → user, id.
func words(s string) []string {
	var out []string
	r := []rune(s)
	start := 0
	flush := func(end int) {
		if end > start {
			out = append(out, strings.ToLower(string(r[start:end])))
		}
	}
	for i := 0; i < len(r); i++ {
		switch {
		case r[i] == '_' || r[i] == '-':
			flush(i)
			start = i + 1
		case i > start && unicode.IsUpper(r[i]):
			prevLower := unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1])
			nextLower := i+1 < len(r) && unicode.IsLower(r[i+1]) && unicode.IsUpper(r[i-1])
			if prevLower || nextLower {
				flush(i)
				start = i
			}
		}
	}
	flush(len(r))
	return out
}

// goName is the exported Go name of a logical name: rateLimit → RateLimit,
// apikey → APIKey, configId → ConfigID.
func goName(s string) string {
	var b strings.Builder
	for _, w := range words(s) {
		if up, ok := initialisms[w]; ok {
			b.WriteString(up)
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}

// snakeName is the snake_case form of a logical name, the spelling ent
// expects for its field names whatever the column is called.
func snakeName(s string) string { return strings.Join(words(s), "_") }

// validPackage reports whether name can be a Go package clause.
func validPackage(name string) bool {
	if !token.IsIdentifier(name) || token.IsKeyword(name) || name == "_" {
		return false
	}
	return true
}
