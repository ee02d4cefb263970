package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// counterModel is the logical name of [CounterModel].
const counterModel = "counter"

// maxContentionRetries bounds how often a caller repeats a request that
// failed with core.ErrContention. The transaction fallback gives up after
// 100 lost races, which under the suite's load is normal:
// an application retries it, and so do the race cases, so that they can
// still count exact outcomes. A caller that never gets through is a failure.
const maxContentionRetries = 10000

// incrementRetrying runs db.IncrementOne, repeating it while it fails with
// core.ErrContention.
func incrementRetrying(ctx context.Context, db *core.DB, req core.IncrementRequest) (core.Row, bool, error) {
	for i := 0; ; i++ {
		row, ok, err := db.IncrementOne(ctx, req)
		if errors.Is(err, core.ErrContention) && i < maxContentionRetries && ctx.Err() == nil {
			runtime.Gosched() // let the winner of the race finish before trying again
			continue
		}
		return row, ok, err
	}
}

// sameRow reports how got differs from want, or "" when they hold the same
// values: times compare as instants, everything else by value.
func sameRow(want, got core.Row) string {
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	var diffs []string
	for _, k := range names {
		w, g := want[k], got[k]
		wt, wok := w.(time.Time)
		gt, gok := g.(time.Time)
		switch {
		case wok && gok:
			if !wt.Equal(gt) {
				diffs = append(diffs, fmt.Sprintf("%s: want %s, got %s", k, driver.FormatTime(wt), driver.FormatTime(gt)))
			}
		case w != g:
			diffs = append(diffs, fmt.Sprintf("%s: want %#v, got %#v", k, w, g))
		}
	}
	return strings.Join(diffs, "; ")
}

// errorList collects the failures of concurrent callers, keeping the first
// few and counting the rest.
type errorList struct {
	mu    sync.Mutex
	first []error
	n     int
}

func (l *errorList) add(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if len(l.first) < 3 {
		l.first = append(l.first, err)
	}
}

// err returns nil when nothing failed.
func (l *errorList) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		return nil
	}
	return fmt.Errorf("%d failure(s), first: %w", l.n, errors.Join(l.first...))
}
