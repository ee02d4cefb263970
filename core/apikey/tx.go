package apikey

import (
	"fmt"
)

// In returns a view of m that verifies (and charges) inside tx, a
// transaction the caller began on the manager's database with their own
// ORM and ends themselves: a *sql.Tx, a *gorm.DB in a transaction, a
// bun.Tx, an ent transaction, a pgx.Tx, or a *core.DB bound to one (see
// core.DB.WithTx). A verification's write (the quota, the refill, the
// rate-limit window, named and owner limits) is made in tx: the caller's
// commit keeps it, a rollback refunds it.
//
//	tx, _ := sqlDB.BeginTx(ctx, nil)
//	res, err := keys.In(tx).Verify(ctx, secret)
//	// ... the business write, in tx; commit, or roll back to refund ...
//
// A view shares m's configuration (clock, attempts, default rate limit,
// observer) and its schema check, costs a few small allocations and no
// round trip, and keeps no memory: it neither reads nor fills m's
// key-state cache nor the shared cache of [WithCache], so a rollback
// leaves nothing behind that could disagree with the database, and the
// next verification outside is exact. A verified key's row stays locked
// until the caller commits or rolls back, so a second transaction
// verifying the same key waits for the first to end (see ratelimit's
// Limiter.In for what a deadlock inside tx means).
//
// Refused, with an error wrapping core.ErrInvalid from every call of the
// view and nothing written: a manager made by [NewStorageOnly] (its keys
// are not in the database); on a manager [WithCache], any change to a key
// (Revoke, Update, Reroll, limits, DeleteExpired, ...), whose renewal of
// the shared cache would precede the caller's commit; a nil tx, a handle
// the manager's adapter does not take, a *core.DB bound from another
// core.DB, and a transaction the adapter can tell is of another database.
// A transaction already committed or rolled back is refused by its first
// statement, with an error wrapping core.ErrInvalid.
//
// In on a view binds m's own manager anew.
func (m *Manager) In(tx any) *Manager {
	if m != nil && m.parent != nil {
		m = m.parent
	}
	if m.initialised("In") != nil {
		return &Manager{} // answers every call as not initialised
	}
	v := &Manager{storage: m.storage, o: m.o, parent: m, store: m.store}
	d, ok := m.store.(*dbStore)
	if !ok {
		v.txErr = invalidf("In: charging in a transaction needs a manager on the database (apikey.New), not one made by NewStorageOnly")
		return v
	}
	db, err := d.db.WithTx(tx)
	if err != nil {
		v.txErr = fmt.Errorf("apikey: In: %w", err)
		return v
	}
	vd := &dbStore{db: db, now: v.now, maxAttempts: d.maxAttempts, dropExpired: d.dropExpired, schema: d.schema, tx: true}
	if d.cache != nil {
		vd.cache = &sharedCache{tx: true}
	}
	v.store = vd
	return v
}
