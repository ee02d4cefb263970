package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// secretKey is a recognisable key, as an HTTP key function returning the
// x-api-key header would give the limiter; secretPart is what must never
// show.
const (
	secretKey  = "sk_live_SECRETpart0123456789abcdefghij"
	secretPart = "SECRETpart"
)

var errEcho = errors.New("echoing store down")

// echoDB is an adapter whose every call fails with a message that echoes
// what it was given, the key included, as some drivers' messages do.
type echoDB struct{ *memory.Memory }

func (echoDB) Create(_ context.Context, _ *driver.Table, v []driver.Assignment) (driver.Record, error) {
	return nil, fmt.Errorf("%w: create %v", errEcho, v)
}
func (echoDB) FindOne(_ context.Context, _ *driver.Table, w []driver.Where) (driver.Record, error) {
	return nil, fmt.Errorf("%w: find %v", errEcho, w)
}
func (echoDB) FindMany(_ context.Context, _ *driver.Table, w []driver.Where, _ driver.FindOptions) ([]driver.Record, error) {
	return nil, fmt.Errorf("%w: find %v", errEcho, w)
}
func (echoDB) IncrementOne(_ context.Context, _ *driver.Table, w []driver.Where, _ []driver.Delta, _ []driver.Assignment) (driver.Record, error) {
	return nil, fmt.Errorf("%w: increment %v", errEcho, w)
}
func (echoDB) DeleteMany(_ context.Context, _ *driver.Table, w []driver.Where) (int64, error) {
	return 0, fmt.Errorf("%w: delete %v", errEcho, w)
}
func (echoDB) Delete(_ context.Context, _ *driver.Table, w []driver.Where) (bool, error) {
	return false, fmt.Errorf("%w: delete %v", errEcho, w)
}

// echoStorage is a secondary storage whose every call fails echoing its key.
type echoStorage struct{ *memory.Storage }

func (echoStorage) Get(_ context.Context, k string) (string, bool, error) {
	return "", false, fmt.Errorf("%w: get %q", errEcho, k)
}
func (echoStorage) Delete(_ context.Context, k string) error {
	return fmt.Errorf("%w: delete %s", errEcho, k)
}
func (echoStorage) Increment(_ context.Context, k string, _ int64, _ time.Duration) (driver.Counter, error) {
	return driver.Counter{}, fmt.Errorf("%w: increment %s", errEcho, k)
}
func (echoStorage) IncrementBounded(_ context.Context, k string, _, _ int64, _ time.Duration) (driver.Counter, bool, error) {
	return driver.Counter{}, false, fmt.Errorf("%w: increment %s", errEcho, k)
}
func (echoStorage) AdvanceTAT(_ context.Context, k string, _, _, _ int64) (int64, bool, error) {
	return 0, false, fmt.Errorf("%w: advance %s", errEcho, k)
}

// leaks reports what is wrong with err's text: the key in it, or a text
// longer than a redacted key can make it.
func leaks(err error) string {
	switch msg := err.Error(); {
	case strings.Contains(msg, secretPart):
		return "holds the key"
	case len(msg) > 1024:
		return fmt.Sprintf("is %d bytes long", len(msg))
	}
	return ""
}

// TestErrorsRedactTheKey: on every failure path of every mode and storage
// (the storage failing with a message that echoes the key, bad input, a
// 1 MiB key) the limiter's error names the key only redacted, bounded, and
// still wraps its cause.
func TestErrorsRedactTheKey(t *testing.T) {
	ctx := context.Background()
	rule := ratelimit.Rule{Window: time.Minute, Max: 5}
	db, _ := core.New(echoDB{memory.New()})
	good, _ := core.New(memory.New())
	storages := map[string]func() ratelimit.Storage{
		"database":  func() ratelimit.Storage { return ratelimit.Database(db) },
		"secondary": func() ratelimit.Storage { return ratelimit.Secondary(echoStorage{memory.NewStorage()}) },
		"memory":    func() ratelimit.Storage { return ratelimit.Memory(10) },
		"checked":   func() ratelimit.Storage { return ratelimit.Database(good) },
	}
	for name, storage := range storages {
		for _, mode := range []ratelimit.Mode{ratelimit.FixedWindow, ratelimit.BetterAuthWindow, ratelimit.SlidingWindow, ratelimit.GCRA} {
			l, err := ratelimit.New(storage(), ratelimit.WithMode(mode), ratelimit.WithFailOpen())
			if err != nil {
				continue // a mode the storage does not serve
			}
			fails := name == "database" || name == "secondary"
			calls := map[string]func() error{
				"Consume": func() error { _, err := l.Consume(ctx, secretKey, rule); return err },
				"Check":   func() error { _, err := l.Check(ctx, secretKey, rule); return err },
				"Reset":   func() error { return l.ResetRule(ctx, secretKey, rule) },
			}
			for call, f := range calls {
				err := f()
				if !fails {
					continue
				}
				if !errors.Is(err, errEcho) {
					t.Errorf("%s %v %s: %v; want the storage's error", name, mode, call, err)
				} else if why := leaks(err); why != "" {
					t.Errorf("%s %v %s: the error %s: %v", name, mode, call, why, err)
				}
			}
			for what, bad := range map[string]func() (ratelimit.Decision, error){
				"a negative cost": func() (ratelimit.Decision, error) { return l.ConsumeN(ctx, secretKey, rule, -1) },
				"a bad rule":      func() (ratelimit.Decision, error) { return l.Consume(ctx, secretKey, ratelimit.Rule{Max: 1}) },
				"a NUL":           func() (ratelimit.Decision, error) { return l.Consume(ctx, secretKey+"\x00", rule) },
				"invalid UTF-8":   func() (ratelimit.Decision, error) { return l.Consume(ctx, secretKey+"\xff", rule) },
				"a 1 MiB key":     func() (ratelimit.Decision, error) { return l.Consume(ctx, secretKey+strings.Repeat("x", 1<<20), rule) },
			} {
				d, err := bad()
				if what == "a 1 MiB key" && (name != "database" && name != "checked" || mode == ratelimit.SlidingWindow) {
					// A key the storage holds (by its digest, under
					// SlidingWindow): only its failure is an error.
					if err != nil && !errors.Is(err, errEcho) || err == nil && fails {
						t.Errorf("%s %v, %s: %v; want the storage's error", name, mode, what, err)
					} else if err != nil && leaks(err) != "" {
						t.Errorf("%s %v, %s: the error %s: %.300v", name, mode, what, leaks(err), err)
					}
					continue
				}
				if !errors.Is(err, core.ErrInvalid) || d.Allowed {
					t.Errorf("%s %v, %s: %+v, %v; want a denial wrapping core.ErrInvalid", name, mode, what, d, err)
				} else if why := leaks(err); why != "" {
					t.Errorf("%s %v, %s: the error %s: %v", name, mode, what, why, err)
				}
			}
		}
	}
}
