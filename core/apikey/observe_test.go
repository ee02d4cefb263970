package apikey

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
)

// An observer sees every verification as the caller got it: valid, rate
// limited, unknown, and a failure.
func TestObserverSeesEveryVerification(t *testing.T) {
	var events []Event
	e := newEnv(t, WithObserver(func(_ context.Context, ev Event) {
		if ev.Kind == Verified {
			events = append(events, ev)
		}
	}))
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
	if events[0].KeyID != k.ID || events[0].Key == nil || events[0].Key.ID != k.ID || events[2].KeyID != 0 || events[2].Key != nil {
		t.Errorf("key ids %d and %d, want %d and 0", events[0].KeyID, events[2].KeyID, k.ID)
	}
	if !errors.Is(events[3].Err, core.ErrInvalid) || err == nil || events[3].Err.Error() != err.Error() {
		t.Errorf("error event %v, the caller got %v", events[3].Err, err)
	}
	if _, err := New(e.db, WithObserver(nil)); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("New(WithObserver(nil)) = %v, want ErrInvalid", err)
	}
}

// An observer sees every change that succeeds, as the caller got it, in
// database mode and in storage-only mode, and no change that fails.
func TestObserverSeesEveryChange(t *testing.T) {
	for _, storageOnly := range []bool{false, true} {
		name := "database"
		if storageOnly {
			name = "storage"
		}
		t.Run(name, func(t *testing.T) {
			var events []Event
			observe := WithObserver(func(_ context.Context, ev Event) { events = append(events, ev) })
			clock := newClock()
			var m *Manager
			var err error
			if storageOnly {
				m, err = NewStorageOnly(memory.NewStorage(memory.WithClock(clock.Now)), WithClock(clock.Now), observe)
			} else {
				var db *core.DB
				if db, err = core.New(memory.New()); err == nil {
					m, err = New(db, WithClock(clock.Now), observe)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			_, k, err := m.Create(ctx, CreateParams{ReferenceID: "owner", ExpiresIn: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			_, short, err := m.Create(ctx, CreateParams{ReferenceID: "owner", ExpiresIn: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			renamed := "renamed"
			if _, err := m.Update(ctx, k.ID, UpdateParams{Name: &renamed}); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Update(ctx, k.ID+1000, UpdateParams{Name: &renamed}); !errors.Is(err, core.ErrNotFound) {
				t.Fatalf("Update of an unknown id: %v", err)
			}
			if _, err := m.Update(ctx, k.ID, UpdateParams{}); !errors.Is(err, core.ErrInvalid) {
				t.Fatalf("empty Update: %v", err)
			}
			clock.Advance(2 * time.Second)
			if n, err := m.DeleteExpired(ctx); err != nil || n != 1 {
				t.Fatalf("DeleteExpired = %d, %v; want 1", n, err)
			}
			if ok, err := m.Delete(ctx, k.ID); err != nil || !ok {
				t.Fatalf("Delete = %v, %v", ok, err)
			}
			if ok, err := m.Delete(ctx, k.ID); err != nil || ok {
				t.Fatalf("second Delete = %v, %v", ok, err)
			}
			type seen struct {
				kind  EventKind
				id    int64
				count int64
				name  string
			}
			want := []seen{{Created, k.ID, 0, ""}, {Created, short.ID, 0, ""}, {Updated, k.ID, 0, "renamed"}, {ExpiredDeleted, 0, 1, ""}, {Deleted, k.ID, 0, ""}}
			if len(events) != len(want) {
				t.Fatalf("%d events %+v, want %d", len(events), events, len(want))
			}
			for i, ev := range events {
				got := seen{ev.Kind, ev.KeyID, ev.Count, ""}
				if ev.Key != nil {
					got.name = ev.Key.Name
					if ev.Key.ID != ev.KeyID {
						t.Errorf("event %d: Key.ID %d, KeyID %d", i, ev.Key.ID, ev.KeyID)
					}
				}
				if got != want[i] || ev.Outcome() != want[i].kind.String() || ev.Storage != name || ev.Start.IsZero() {
					t.Errorf("event %d: %+v (outcome %q), want %+v", i, ev, ev.Outcome(), want[i])
				}
				if (ev.Kind == Created || ev.Kind == Updated) != (ev.Key != nil) {
					t.Errorf("event %d (%v): Key %v", i, ev.Kind, ev.Key)
				}
			}
		})
	}
}
