package server

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
	sluiceotel "github.com/sluice-go/sluice/observe/otel"
	"github.com/sluice-go/sluice/operator"
)

// Server is the demo's HTTP handler and what it runs on. Build it with New
// and Close it when done.
type Server struct {
	cfg     Config
	db      *database
	redis   *redis.Client
	handler http.Handler
	meters  *sdkmetric.MeterProvider

	// Limiter limits requests per client IP.
	Limiter *ratelimit.Limiter
	// Keys creates and verifies the API keys.
	Keys *apikey.Manager

	operatorToken string
}

// New opens cfg's database through cfg's ORM, creates the tables from gen's
// DDL when they are missing, and returns the server. A bad configuration is
// an error wrapping core.ErrInvalid, before any connection is opened.
func New(ctx context.Context, cfg Config) (_ *Server, err error) {
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.db, err = openDatabase(ctx, cfg); err != nil {
		return nil, err
	}
	if err = s.db.createTables(ctx); err != nil {
		return nil, err
	}

	storage := ratelimit.Database(s.db.db)
	if cfg.Redis != "" {
		s.redis = redis.NewClient(&redis.Options{Addr: cfg.Redis})
		if err = s.redis.Ping(ctx).Err(); err != nil {
			return nil, fmt.Errorf("connecting to Redis at %s: %w", cfg.Redis, err)
		}
		var rs *sluiceredis.Storage
		if rs, err = sluiceredis.New(s.redis, sluiceredis.WithPrefix(cfg.RedisPrefix)); err != nil {
			return nil, err
		}
		storage = ratelimit.Secondary(rs)
	}
	// Every decision and verification goes to the log and to the metrics
	// that GET /metrics shows.
	meters, reader := newMetrics()
	s.meters = meters
	rlMetrics, err := sluiceotel.RateLimitObserver(sluiceotel.WithMeterProvider(meters))
	if err != nil {
		return nil, err
	}
	keyMetrics, err := sluiceotel.APIKeyObserver(sluiceotel.WithMeterProvider(meters))
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	// The operator console's history and live view.
	rec := operator.NewRecorder()
	if s.Limiter, err = ratelimit.New(storage, ratelimit.WithClock(cfg.Clock),
		ratelimit.WithObserver(fanOut(rateLimitLogger(log, newKeyHasher()), rlMetrics, rec.ObserveLimits))); err != nil {
		return nil, err
	}
	limit, err := sluicehttp.RateLimit(sluicehttp.RateLimitConfig{
		Limiter: s.Limiter,
		Default: ratelimit.Unlimited, // /api/* is limited per key instead
		Paths:   map[string]ratelimit.Rule{"/hello": cfg.Hello, "/keys": cfg.CreateKeys},
		OnError: func(r *http.Request, err error) {
			log.LogAttrs(r.Context(), slog.LevelError, "rate limit: request refused",
				slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("error", err))
		},
	})
	if err != nil {
		return nil, err
	}
	use := newUsage()
	if s.Keys, err = apikey.New(s.db.db, apikey.WithClock(cfg.Clock),
		apikey.WithObserver(fanOut(apiKeyLogger(log), keyMetrics, use.observe, rec.ObserveKeys))); err != nil {
		return nil, err
	}
	if s.operatorToken = cfg.OperatorToken; s.operatorToken == "" {
		s.operatorToken = rand.Text()
	}
	console, err := operator.New(operator.Config{
		Keys: s.Keys, Authorize: operator.BearerToken("operator", s.operatorToken),
		Limiter: s.Limiter, Rules: map[string]ratelimit.Rule{"hello": cfg.Hello, "keys": cfg.CreateKeys},
		Recorder: rec, Clock: cfg.Clock, Logger: log,
	})
	if err != nil {
		return nil, err
	}

	requireKey, err := sluicehttp.APIKey(sluicehttp.APIKeyConfig{Manager: s.Keys, OnError: func(r *http.Request, err error) {
		log.LogAttrs(r.Context(), slog.LevelError, "API key: request refused",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("error", err))
	}})
	if err != nil {
		return nil, err
	}

	// POST /api/data needs a key with the permission to write data.
	requireWriter, err := sluicehttp.APIKey(sluicehttp.APIKeyConfig{Manager: s.Keys,
		Verify: []apikey.VerifyOption{apikey.Permissions(map[string][]string{"data": {"write"}})}})
	if err != nil {
		return nil, err
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.index)
	mux.HandleFunc("GET /hello", s.hello)
	mux.HandleFunc("POST /keys", s.createKey)
	mux.HandleFunc("POST /keys/reroll", s.rerollKey)
	mux.Handle("GET /api/data", requireKey(http.HandlerFunc(s.data)))
	mux.Handle("POST /api/data", requireWriter(http.HandlerFunc(s.writeData)))
	mux.Handle("GET /metrics", metricsHandler(reader))
	mux.HandleFunc("GET /usage", use.serve)
	mux.Handle("/operator/", http.StripPrefix("/operator", console))
	s.handler = limit(mux)
	return s, nil
}

// ServeHTTP serves the demo's routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Close drops the tables when Config.DropTables asks it, closes the
// connections and removes the temporary SQLite directory, if any.
func (s *Server) Close() error {
	var errs []error
	if s.Limiter != nil {
		errs = append(errs, s.Limiter.Close())
	}
	if s.meters != nil {
		errs = append(errs, s.meters.Shutdown(context.Background()))
	}
	if s.redis != nil {
		errs = append(errs, s.redis.Close())
	}
	if s.db != nil {
		if s.cfg.DropTables && s.db.db != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			errs = append(errs, s.db.dropTables(ctx))
			cancel()
		}
		errs = append(errs, s.db.close())
	}
	return errors.Join(errs...)
}

// OperatorToken is the bearer token of the console at /operator/.
func (s *Server) OperatorToken() string { return s.operatorToken }

// Config returns the configuration in use, defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// Where says what the server runs on, such as
// "gorm on sqlite (/tmp/sluice-demo-1/sluice-demo.db), per-IP counters in the database".
func (s *Server) Where() string {
	counters := "the database"
	if s.cfg.Redis != "" {
		counters = "Redis at " + s.cfg.Redis
	}
	return fmt.Sprintf("%s on %s (%s), per-IP counters in %s", s.cfg.ORM, s.cfg.DB, s.db.where, counters)
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, s.Banner("http://"+r.Host))
}

func (s *Server) hello(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"message": "hello",
		"client":  sluicehttp.ClientKey(r, nil),
		"limit":   fmt.Sprintf("%d per %v per client IP", s.cfg.Hello.Max, s.cfg.Hello.Window),
	})
}

// data answers a request whose key the middleware verified and charged.
// It also reports the key's rate-limit window in RateLimit-* headers, so
// that the burst client can tell the limit it measured against.
func (s *Server) data(w http.ResponseWriter, r *http.Request) {
	k, _ := sluicehttp.KeyFromContext(r.Context())
	if k.RateLimit.Enabled {
		w.Header().Set("RateLimit-Limit", fmt.Sprint(k.RateLimit.Max))
		w.Header().Set("RateLimit-Remaining", fmt.Sprint(max(k.RateLimit.Max-k.RequestCount, 0)))
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"message": "here is your data",
		"key":     describeKey(k),
	})
}

// writeData answers POST /api/data, which only a key allowed to write
// data reaches.
func (s *Server) writeData(w http.ResponseWriter, r *http.Request) {
	k, _ := sluicehttp.KeyFromContext(r.Context())
	writeJSON(w, http.StatusOK, map[string]any{"message": "written", "key": describeKey(k)})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
