package sluicegorm

import (
	"database/sql"
	"fmt"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"gorm.io/gorm"
)

// bindTx is the adapter's Options.BindTx: a *gorm.DB in a transaction the
// caller began (db.Begin(), or the tx of db.Transaction), on which the
// engine runs and which it never ends (core.DB.WithTx, and the limiter's
// and the API-key manager's In). A *gorm.DB that is not in a transaction,
// that carries an error, or whose *sql.Tx was begun on another pool than
// root's (another database) is refused with core.ErrInvalid.
func bindTx(root *sql.DB, dollar bool) func(h any) (sluicesql.Executor, error) {
	return func(h any) (sluicesql.Executor, error) {
		tx, ok := h.(*gorm.DB)
		if !ok {
			return nil, sluicesql.NotATx("sluicegorm", h, "a *gorm.DB in a transaction")
		}
		switch {
		case tx.Statement == nil || tx.Config == nil:
			return nil, fmt.Errorf("%w: sluicegorm: the *gorm.DB is not initialised (open it with gorm.Open)", core.ErrInvalid)
		case !inTx(tx):
			return nil, fmt.Errorf("%w: sluicegorm: the *gorm.DB is not in a transaction: pass the tx of db.Transaction or db.Begin()", core.ErrInvalid)
		case tx.Error != nil:
			return nil, fmt.Errorf("%w: sluicegorm: the transaction's *gorm.DB carries an error: %w", core.ErrInvalid, tx.Error)
		}
		if st, ok := tx.Statement.ConnPool.(*sql.Tx); ok {
			if err := sluicesql.CheckTxOf(st, root); err != nil {
				return nil, fmt.Errorf("sluicegorm: %w", err)
			}
		}
		return executor{db: tx.Session(&gorm.Session{NewDB: true}), dollar: dollar}, nil
	}
}
