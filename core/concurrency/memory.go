package concurrency

import (
	"context"
	"sync"
	"sync/atomic"
)

// Memory keeps slots in this process: for a program that runs as one
// process, or limits per process. Each key has a lock of its own, so
// callers on different keys never wait for each other. Generations come
// from one process-wide counter, so a key forgotten and used again never
// repeats one. A key is forgotten when its last slot is released, and
// keys whose leases all ended are swept as acquisitions go on.
func Memory() Store { return &memStore{} }

type memStore struct {
	keys  sync.Map // string → *memKey
	gen   atomic.Int64
	calls atomic.Int64 // acquisitions, to sweep every sweepEvery
}

// sweepEvery is how many acquisitions pass between two sweeps of the keys
// whose leases have all ended.
const sweepEvery = 4096

type memKey struct {
	mu    sync.Mutex
	dead  bool // removed from the map: look the key up again
	slots []memSlot
}

type memSlot struct{ expires, gen int64 }

// lock returns key's entry, locked, creating it when create is true; nil
// when there is none.
func (s *memStore) lock(key string, create bool) *memKey {
	for {
		v, ok := s.keys.Load(key)
		if !ok {
			if !create {
				return nil
			}
			v, _ = s.keys.LoadOrStore(key, &memKey{})
		}
		k := v.(*memKey)
		k.mu.Lock()
		if !k.dead {
			return k
		}
		k.mu.Unlock()
	}
}

// idle reports whether no slot of k is leased at now.
func (k *memKey) idle(now int64) bool {
	for _, sl := range k.slots {
		if sl.expires > now {
			return false
		}
	}
	return true
}

// forget removes k, locked and idle, from the map.
func (s *memStore) forget(key string, k *memKey) {
	k.dead = true
	s.keys.CompareAndDelete(key, k)
}

func (s *memStore) AcquireSlot(ctx context.Context, key string, n int, now, expires int64) (Lease, bool, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, false, err
	}
	if s.calls.Add(1)%sweepEvery == 0 {
		s.sweep(now)
	}
	k := s.lock(key, true)
	defer k.mu.Unlock()
	if len(k.slots) < n {
		k.slots = append(k.slots, make([]memSlot, n-len(k.slots))...)
	}
	earliest := int64(-1)
	for i := range n {
		sl := &k.slots[i]
		if sl.expires <= now {
			sl.expires, sl.gen = expires, s.gen.Add(1)
			return Lease{Slot: i, Generation: sl.gen, Expires: expires}, true, nil
		}
		if earliest < 0 || sl.expires < earliest {
			earliest = sl.expires
		}
	}
	return Lease{Expires: earliest}, false, nil
}

func (s *memStore) ReleaseSlot(ctx context.Context, key string, l Lease, now int64) (bool, error) {
	return s.update(ctx, key, l, now, 0)
}

func (s *memStore) RenewSlot(ctx context.Context, key string, l Lease, now, expires int64) (bool, error) {
	return s.update(ctx, key, l, now, expires)
}

func (s *memStore) update(ctx context.Context, key string, l Lease, now, expires int64) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	k := s.lock(key, false)
	if k == nil {
		return false, nil
	}
	defer k.mu.Unlock()
	if l.Slot < 0 || l.Slot >= len(k.slots) {
		return false, nil
	}
	sl := &k.slots[l.Slot]
	if sl.gen != l.Generation || sl.expires <= now {
		return false, nil
	}
	sl.expires = expires
	if expires == 0 && k.idle(now) {
		s.forget(key, k)
	}
	return true, nil
}

// sweep forgets the keys whose leases have all ended at now.
func (s *memStore) sweep(now int64) {
	s.keys.Range(func(key, v any) bool {
		k := v.(*memKey)
		k.mu.Lock()
		if !k.dead && k.idle(now) {
			s.forget(key.(string), k)
		}
		k.mu.Unlock()
		return true
	})
}
