package server

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"

	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// fanOut returns an observer that calls each of observers in turn: the
// demo hands every event to its log and to its metrics.
func fanOut[E any](observers ...func(context.Context, E)) func(context.Context, E) {
	return func(ctx context.Context, e E) {
		for _, o := range observers {
			o(ctx, e)
		}
	}
}

// keyHasher turns a rate-limit key (a client IP address here) into a
// short pseudonym for the log: an HMAC under a secret drawn at start, so
// that a run's lines about one client can be told together, while the
// address cannot be recovered by hashing every IPv4 address.
type keyHasher struct{ secret []byte }

func newKeyHasher() keyHasher {
	s := make([]byte, 32)
	_, _ = rand.Read(s) // crypto/rand.Read never fails (Go 1.24+)
	return keyHasher{secret: s}
}

func (h keyHasher) hash(key string) string {
	m := hmac.New(sha256.New, h.secret)
	m.Write([]byte(key))
	return hex.EncodeToString(m.Sum(nil)[:6])
}

// level is the level an event is logged at: Error for an error, Info for
// a denial, Debug for the rest.
func level(err error, admitted bool) slog.Level {
	switch {
	case err != nil:
		return slog.LevelError
	case !admitted:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// rateLimitLogger logs each decision of the limiter on log. The key is
// logged only as keyHasher's pseudonym, as key_hash.
func rateLimitLogger(log *slog.Logger, h keyHasher) func(context.Context, ratelimit.Event) {
	return func(ctx context.Context, e ratelimit.Event) {
		lvl := level(e.Err, e.Decision.Allowed)
		if !log.Enabled(ctx, lvl) {
			return // no hashing for a line nobody reads
		}
		attrs := []slog.Attr{
			slog.String("outcome", e.Outcome()),
			slog.String("rule", e.Rule.String()),
			slog.String("mode", e.Mode.String()),
			slog.String("storage", e.Storage),
			slog.String("key_hash", h.hash(e.Key)),
			slog.Int64("cost", e.Cost),
			slog.Duration("latency", e.Latency),
			slog.Int64("round_trips", e.RoundTrips),
		}
		msg := "rate limit: allowed"
		switch lvl {
		case slog.LevelError:
			msg = "rate limit: decision failed"
			attrs = append(attrs, slog.Bool("allowed", e.Decision.Allowed), slog.Any("error", e.Err))
		case slog.LevelInfo:
			msg = "rate limit: denied"
			attrs = append(attrs, slog.Int64("limit", e.Decision.Limit), slog.Duration("retry_after", e.Decision.RetryAfter))
		default:
			attrs = append(attrs, slog.Int64("limit", e.Decision.Limit), slog.Int64("remaining", e.Decision.Remaining))
		}
		log.LogAttrs(ctx, lvl, msg, attrs...)
	}
}

// apiKeyLogger logs each verification and each change to the keys on log.
// The API key itself is never logged: only its numeric id, once the key is
// known.
func apiKeyLogger(log *slog.Logger) func(context.Context, apikey.Event) {
	return func(ctx context.Context, e apikey.Event) {
		if e.Kind != apikey.Verified {
			log.LogAttrs(ctx, slog.LevelInfo, "API key: "+e.Kind.String(),
				slog.Int64("key_id", e.KeyID), slog.Int64("count", max(e.Count, 1)), slog.String("storage", e.Storage))
			return
		}
		lvl := level(e.Err, e.Result.Valid)
		if !log.Enabled(ctx, lvl) {
			return
		}
		attrs := []slog.Attr{
			slog.String("outcome", e.Outcome()),
			slog.String("storage", e.Storage),
			slog.Duration("latency", e.Latency),
			slog.Int64("round_trips", e.RoundTrips),
		}
		if e.KeyID != 0 {
			attrs = append(attrs, slog.Int64("key_id", e.KeyID))
		}
		msg := "API key: valid"
		switch lvl {
		case slog.LevelError:
			msg = "API key: verification failed"
			attrs = append(attrs, slog.Any("error", e.Err))
		case slog.LevelInfo:
			msg = "API key: denied"
			attrs = append(attrs, slog.Int("status", e.Result.Status))
			if e.Result.TryAgainIn > 0 {
				attrs = append(attrs, slog.Duration("try_again_in", e.Result.TryAgainIn))
			}
		}
		log.LogAttrs(ctx, lvl, msg, attrs...)
	}
}
