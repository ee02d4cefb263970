package apikey

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
)

// An observer sees every verification as the caller got it: valid, rate
// limited, unknown, and a failure.
func TestObserverSeesEveryVerification(t *testing.T) {
	var events []Event
	e := newEnv(t, WithObserver(func(_ context.Context, ev Event) { events = append(events, ev) }))
	plain, k := e.create(t, CreateParams{RateLimit: &RateLimit{Enabled: true, Window: time.Minute, Max: 1}})
	var got []Result
	for _, key := range []string{plain, plain, "sk_unknown"} {
		got = append(got, e.verify(t, key))
	}
	_, err := e.m.Verify(context.Background(), plain, Cost(-1))
	if len(events) != 4 {
		t.Fatalf("%d events, want 4", len(events))
	}
	for i, want := range []string{"valid", string(CodeRateLimited), string(CodeInvalid), "error"} {
		ev := events[i]
		if ev.Outcome() != want || ev.Storage != "database" || ev.Start.IsZero() || ev.Latency < 0 {
			t.Errorf("event %d: %+v, outcome %q; want %q", i, ev, ev.Outcome(), want)
		}
		if i < 3 && (ev.Result.Valid != got[i].Valid || ev.Result.Code != got[i].Code) {
			t.Errorf("event %d: result %+v; the caller got %+v", i, ev.Result, got[i])
		}
	}
	if events[0].KeyID != k.ID || events[2].KeyID != 0 {
		t.Errorf("key ids %d and %d, want %d and 0", events[0].KeyID, events[2].KeyID, k.ID)
	}
	if !errors.Is(events[3].Err, core.ErrInvalid) || err == nil || events[3].Err.Error() != err.Error() {
		t.Errorf("error event %v, the caller got %v", events[3].Err, err)
	}
	if _, err := New(e.db, WithObserver(nil)); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("New(WithObserver(nil)) = %v, want ErrInvalid", err)
	}
}
