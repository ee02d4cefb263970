package concurrency_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/concurrency"
)

const secretKey = "sk_live_SECRETpart0123456789abcdefghij"

var errEcho = errors.New("echoing store down")

// echoStore leases on Acquire when ok, then fails every call with a
// message that echoes the key.
type echoStore struct{ ok bool }

func (s echoStore) AcquireSlot(_ context.Context, key string, _ int, _, expires int64) (concurrency.Lease, bool, error) {
	if s.ok {
		return concurrency.Lease{Generation: 1, Expires: expires}, true, nil
	}
	return concurrency.Lease{}, false, fmt.Errorf("%w: acquire %q", errEcho, key)
}
func (echoStore) ReleaseSlot(_ context.Context, key string, _ concurrency.Lease, _ int64) (bool, error) {
	return false, fmt.Errorf("%w: release %s", errEcho, key)
}
func (echoStore) RenewSlot(_ context.Context, key string, _ concurrency.Lease, _, _ int64) (bool, error) {
	return false, fmt.Errorf("%w: renew %s#0", errEcho, key)
}

// TestErrorsRedactTheKey: a store failing with a message that echoes the
// key, on Acquire, Release and Renew, gives an error that names the key
// only redacted and still wraps the store's.
func TestErrorsRedactTheKey(t *testing.T) {
	ctx := context.Background()
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, errEcho) || strings.Contains(err.Error(), "SECRETpart") {
			t.Errorf("%s: %v; want the store's error without the key", op, err)
		}
	}
	down, _ := concurrency.New(echoStore{})
	_, _, err := down.Acquire(ctx, secretKey, 1, time.Second)
	check("Acquire", err)
	_, _, err = down.Acquire(ctx, secretKey+strings.Repeat("x", 1<<20), 1, time.Second)
	check("Acquire of a 1 MiB key", err)
	if len(err.Error()) > 1024 {
		t.Errorf("Acquire of a 1 MiB key: an error of %d bytes", len(err.Error()))
	}
	up, _ := concurrency.New(echoStore{ok: true})
	s, ok, err := up.Acquire(ctx, secretKey, 1, time.Second)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	_, err = s.Renew(ctx)
	check("Renew", err)
	_, err = s.Release(ctx)
	check("Release", err)
}
