package operator

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"time"

	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// Config is what [New] builds the handler from.
type Config struct {
	// Keys is the key manager the API changes: required.
	Keys *apikey.Manager
	// Authorize admits each API request and names its actor: required
	// (see [BearerToken]). The console's page and assets, and the OpenAPI
	// document, are served without it; they hold no data.
	Authorize Authorizer
	// Limiter and Rules, when set, let the API show and reset rate-limit
	// counters under the rules Rules names (such as "hello" → 5 per 10 s).
	Limiter *ratelimit.Limiter
	Rules   map[string]ratelimit.Rule
	// Recorder, when set (and given to the manager and the limiter as
	// their observer), supplies each key's history and the live view.
	Recorder *Recorder
	// Logger, when set, gets one line per API request: method, route,
	// status and actor, never a body.
	Logger *slog.Logger
	// LiveInterval is how often GET /live sends a sample (default 1 s).
	LiveInterval time.Duration
	// Clock is the time the API's relative times (expiresIn,
	// expiringWithin) are measured from (default time.Now); give the
	// manager's.
	Clock func() time.Time
}

// Handler serves the API, its OpenAPI document and the console. Build it
// with [New].
type Handler struct {
	cfg  Config
	mux  *http.ServeMux
	spec []byte
}

// New returns the handler, or an error naming what cfg lacks: a manager,
// an authorizer, rules without a limiter.
func New(cfg Config) (*Handler, error) {
	switch {
	case cfg.Keys == nil:
		return nil, errors.New("operator: New: Config.Keys is nil")
	case cfg.Authorize == nil:
		return nil, errors.New("operator: New: Config.Authorize is nil: the API changes keys, so it needs an authorizer (see BearerToken)")
	case len(cfg.Rules) > 0 && cfg.Limiter == nil:
		return nil, errors.New("operator: New: Config.Rules without Config.Limiter")
	case cfg.LiveInterval < 0:
		return nil, fmt.Errorf("operator: New: Config.LiveInterval %v is negative", cfg.LiveInterval)
	}
	for name, r := range cfg.Rules {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("operator: New: rule %q: %w", name, err)
		}
	}
	if cfg.LiveInterval == 0 {
		cfg.LiveInterval = time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux()}
	for _, rt := range routes {
		h.mux.Handle(rt.method+" "+rt.path, h.api(rt))
	}
	spec, err := json.MarshalIndent(openAPI(routes), "", "  ")
	if err != nil {
		return nil, err
	}
	h.spec = spec
	h.mux.Handle("GET /", consoleAssets())
	h.mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(h.spec)
	})
	return h, nil
}

// ServeHTTP serves r, with the security headers every answer carries.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	h.mux.ServeHTTP(w, r)
}

// contentSecurityPolicy lets the console run only its own scripts and
// styles (no inline ones), talk only to its own origin, and be framed by
// nobody.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// api wraps a route: authorize, check the origin of a change, serve, log.
func (h *Handler) api(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		actor, err := h.cfg.Authorize(r)
		switch {
		case err != nil:
			status := http.StatusUnauthorized
			if errors.Is(err, ErrForbidden) {
				status = http.StatusForbidden
			}
			writeProblem(sw, &problem{status: status, detail: err.Error()}, nil)
		case r.Method != http.MethodGet:
			if err = sameOrigin(r); err != nil {
				writeProblem(sw, err, nil)
				break
			}
			fallthrough
		default:
			rt.serve(h, sw, r.WithContext(WithActor(r.Context(), actor)))
		}
		if h.cfg.Logger != nil {
			h.cfg.Logger.LogAttrs(r.Context(), slog.LevelInfo, "operator: "+rt.method+" "+rt.path,
				slog.Int("status", sw.status), slog.String("actor", actor))
		}
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
	w.ResponseWriter.WriteHeader(s)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets the live view's events through as they are written.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// ruleNames lists cfg's rules in name order.
func (h *Handler) ruleNames() []ruleInfo {
	out := make([]ruleInfo, 0, len(h.cfg.Rules))
	for name, r := range h.cfg.Rules {
		out = append(out, ruleInfo{Name: name, Max: r.Max, TimeWindow: r.Window.Milliseconds(), Calendar: calendarOf(r)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
