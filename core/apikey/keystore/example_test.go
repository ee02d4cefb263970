package keystore_test

import (
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// A storage written in Go decides a claim with Apply, inside whatever makes
// its read and write one atomic step (a lock, a transaction, a
// compare-and-set loop), and writes the key back when it changed.
func ExampleApply() {
	remaining, now := int64(1), int64(1_700_000_000_000)
	stored := &keystore.Key{ID: 7, Key: "hash", Enabled: true, Remaining: &remaining}

	first := keystore.Apply(stored, nil, keystore.Request{Now: now, Cost: 1, Hash: "hash"})
	second := keystore.Apply(stored, nil, keystore.Request{Now: now + 1, Cost: 1, Hash: "hash"})
	fmt.Printf("first: found %v, code %q, remaining %d\n", first.Found, first.Code, *first.Key.Remaining)
	fmt.Printf("second: code %q\n", second.Code)
	// Output:
	// first: found true, code "", remaining 0
	// second: code "USAGE_EXCEEDED"
}

// An anchored refill on the 31st at 09:30 in Berlin falls on February's
// last day, and on the 31st again in March, at 09:30 on the wall clock
// whatever the offset. Interval turns the anchor into the interval rule
// that a guarded write checks (last ≤ now − interval).
func ExampleAnchor() {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		fmt.Println(err)
		return
	}
	a := keystore.Anchor{Day: 31, TimeOfDay: 9*time.Hour + 30*time.Minute, Location: berlin}
	at := time.Date(2027, 1, 15, 0, 0, 0, 0, berlin)
	for range 3 {
		at = a.Next(at)
		fmt.Println(at.Format("Mon Jan 2 15:04 MST"))
	}
	now := time.Date(2027, 3, 31, 12, 0, 0, 0, berlin).UnixMilli()
	lastFeb := time.Date(2027, 2, 28, 9, 30, 0, 0, berlin).UnixMilli()
	due, _ := a.Due(lastFeb, now)
	fmt.Println("due on Mar 31 at noon after a refill on Feb 28:", due, lastFeb <= now-a.Interval(now))
	fmt.Println(keystore.Anchor{Day: 32, Location: berlin}.Problem())
	// Output:
	// Sun Jan 31 09:30 CET
	// Sun Feb 28 09:30 CET
	// Wed Mar 31 09:30 CEST
	// due on Mar 31 at noon after a refill on Feb 28: true true
	// refill day 32 is not a day of the month (1 to 31; a month shorter than the day refills on its last day)
}

// A key is stored, and found, by its hash: Better Auth's, so keys created
// by either verify with the other.
func ExampleHash() {
	fmt.Println(keystore.Hash("test"))
	// Output: n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg
}
