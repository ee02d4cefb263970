package concurrency

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// MaxSlots is the largest n [Limiter.Acquire] accepts: the database store
// names every slot of a key in one IN list.
const MaxSlots = 1000

// Store keeps the slots of every key. Times are epoch milliseconds of the
// [Limiter]'s clock, passed as now; a store's own clock may only run the
// expiry of what it keeps. [Database] and [Memory] are stores; so is
// sluiceredis.Storage, and a store of your own may be passed to [New] too.
//
// Every method must be atomic: however many callers, on however many
// processes, call at once on one key, each slot is leased to at most one
// of them at a time.
type Store interface {
	// AcquireSlot leases a free slot of key's n, numbered 0 to n−1: one
	// never leased or whose lease ended at or before now. The lease lasts
	// until expires, and the slot gets a generation that no earlier lease
	// of that slot had, so that a late release or renewal by an earlier
	// holder changes nothing. When every slot is leased, ok is false and
	// l.Expires is the earliest end of a lease; l is otherwise zero.
	// Slots numbered n or higher (left by calls with a larger n) are ignored.
	AcquireSlot(ctx context.Context, key string, n int, now, expires int64) (l Lease, ok bool, err error)
	// ReleaseSlot frees l's slot when l still holds it: the slot has l's
	// generation and its lease ends after now. It reports whether it did.
	ReleaseSlot(ctx context.Context, key string, l Lease, now int64) (bool, error)
	// RenewSlot moves the end of l's lease to expires when l still holds
	// it (as for ReleaseSlot). It reports whether it did.
	RenewSlot(ctx context.Context, key string, l Lease, now, expires int64) (bool, error)
}

// Lease is a store's record of one slot held.
type Lease struct {
	Slot       int   // the slot's number, 0 to n−1
	Generation int64 // the holder's token: a new one on every acquisition of the slot
	Expires    int64 // epoch milliseconds: the end of the lease
}

// Limiter bounds how many holders each key has at once. It is safe for
// concurrent use.
type Limiter struct {
	store Store
	now   func() time.Time
}

// Option configures [New].
type Option func(*Limiter)

// WithClock makes the limiter read the time from now instead of
// time.Now: for tests, or a clock shared by your servers.
func WithClock(now func() time.Time) Option { return func(l *Limiter) { l.now = now } }

// New returns a limiter on store: [Database], [Memory], or a
// sluiceredis.Storage.
func New(store Store, opts ...Option) (*Limiter, error) {
	if isNil(store) {
		return nil, invalidf("New: nil store")
	}
	l := &Limiter{store: store, now: time.Now}
	for i, o := range opts {
		if o == nil {
			return nil, invalidf("New: option %d is nil", i)
		}
		o(l)
	}
	if l.now == nil {
		return nil, invalidf("WithClock: nil clock")
	}
	return l, nil
}

// Slot is the outcome of [Limiter.Acquire]. When acquired, it is held until
// Release or until its lease ends, whichever comes first; a holder that
// dies therefore frees its slot when the lease ends.
type Slot struct {
	Key       string        // the key acquired
	Index     int           // the slot's number, 0 to n−1
	LeaseTime time.Duration // the length of the lease, which Renew extends by
	// Expires is the end of the lease; on denial, the earliest end of a
	// lease held, when a slot may free up unless released sooner.
	Expires time.Time
	// RetryAfter is, on denial, the time from the call to Expires.
	RetryAfter time.Duration

	l     *Limiter
	lease Lease
}

// Acquire takes one of key's n slots for lease, if one is free. ok is false
// when all n are held (err is nil then: errors are failures only, such as
// the store's). The holder should call [Slot.Release] when done, and
// [Slot.Renew] before the lease ends if it needs longer. lease is rounded
// up to the millisecond, and must stay within time.Duration's range when
// it is; n is at most [MaxSlots]. Use one n for a key:
// slots numbered n or higher, left by a call with a larger n, do not
// count.
func (l *Limiter) Acquire(ctx context.Context, key string, n int, lease time.Duration) (Slot, bool, error) {
	if l == nil || l.store == nil {
		return Slot{}, false, invalidf("Acquire: the limiter is not initialised: make it with concurrency.New")
	}
	switch {
	case key == "":
		return Slot{}, false, invalidf("Acquire: empty key")
	case n < 1 || n > MaxSlots:
		return Slot{}, false, invalidf("Acquire: n = %d, want 1 to %d", n, MaxSlots)
	case lease <= 0:
		return Slot{}, false, invalidf("Acquire: lease %v, want a positive duration", lease)
	}
	ms := ceilMillis(lease)
	if ms > maxLeaseMillis {
		return Slot{}, false, invalidf("Acquire: lease %v rounds up to %d ms, longer than a time.Duration holds (%d ms)", lease, ms, maxLeaseMillis)
	}
	if err := ctx.Err(); err != nil {
		return Slot{}, false, err
	}
	now := l.now().UnixMilli()
	ls, ok, err := l.store.AcquireSlot(ctx, key, n, now, now+ms)
	if err != nil {
		return Slot{}, false, driver.WrapKey("concurrency: Acquire", key, err)
	}
	s := Slot{Key: key, LeaseTime: time.Duration(ms) * time.Millisecond, Expires: time.UnixMilli(ls.Expires)}
	if !ok {
		s.RetryAfter = time.Duration(max(ls.Expires-now, 0)) * time.Millisecond
		return s, false, nil
	}
	s.Index, s.l, s.lease = ls.Slot, l, ls
	return s, true, nil
}

// Held reports whether s was acquired and not yet released by this
// value. It does not look at the clock or the store: the lease may have
// ended.
func (s *Slot) Held() bool { return s != nil && s.l != nil }

// Generation is the holder's token, new on every acquisition of the slot.
func (s *Slot) Generation() int64 { return s.lease.Generation }

// Release frees the slot. released is false when the slot was no longer
// this holder's (its lease had ended, perhaps to be taken by another) or
// s was not acquired or already released; that is not an error. Release
// with a context that is not already done (context.WithoutCancel of a
// request's context, say): otherwise the slot stays held until its lease
// ends.
func (s *Slot) Release(ctx context.Context) (released bool, err error) {
	if !s.Held() {
		return false, nil
	}
	ok, err := s.l.store.ReleaseSlot(ctx, s.Key, s.lease, s.l.now().UnixMilli())
	if err != nil {
		return false, driver.WrapKey("concurrency: Release", s.Key, err)
	}
	s.l = nil
	return ok, nil
}

// Renew extends the lease to LeaseTime from now. renewed is false
// when the slot is no longer this holder's (as for Release); the holder
// should then stop, for another may hold the slot.
func (s *Slot) Renew(ctx context.Context) (renewed bool, err error) {
	if !s.Held() {
		return false, nil
	}
	now := s.l.now().UnixMilli()
	expires := now + s.LeaseTime.Milliseconds()
	ok, err := s.l.store.RenewSlot(ctx, s.Key, s.lease, now, expires)
	if err != nil {
		return false, driver.WrapKey("concurrency: Renew", s.Key, err)
	}
	if ok {
		s.lease.Expires = expires
		s.Expires = time.UnixMilli(expires)
	}
	return ok, nil
}

// maxLeaseMillis is the longest lease in whole milliseconds that a Slot's
// LeaseTime (a time.Duration) holds: a lease in the last millisecond of
// time.Duration's range rounds up past it.
const maxLeaseMillis = math.MaxInt64 / int64(time.Millisecond)

func ceilMillis(d time.Duration) int64 {
	ms := d.Milliseconds()
	if time.Duration(ms)*time.Millisecond < d {
		ms++
	}
	return ms
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("concurrency: %w: %s", core.ErrInvalid, fmt.Sprintf(format, args...))
}

func contention(attempts int) error {
	return fmt.Errorf("%w: still losing races after %d attempts", core.ErrContention, attempts)
}

func lostRace(err error) bool { return errors.Is(err, core.ErrContention) }

// isNil reports whether v is nil or holds a nil pointer, map or func.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Slice, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
