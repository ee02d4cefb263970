package sluicebun

import (
	"database/sql"
	"fmt"

	"github.com/uptrace/bun"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
)

// bindTx is the adapter's Options.BindTx: a bun.Tx (or *bun.Tx) the caller
// began, on which the engine runs and which it never ends (core.DB.WithTx,
// and the limiter's and the API-key manager's In). One whose *sql.Tx was
// begun on another pool than root's *bun.DB (another database) is refused
// with core.ErrInvalid; on a bun.Conn root, bun does not say.
func bindTx(root bun.IDB) func(h any) (sluicesql.Executor, error) {
	var pool *sql.DB
	if db, ok := root.(*bun.DB); ok {
		pool = db.DB
	}
	return func(h any) (sluicesql.Executor, error) {
		var tx bun.Tx
		switch t := h.(type) {
		case bun.Tx:
			tx = t
		case *bun.Tx:
			tx = *t
		default:
			return nil, sluicesql.NotATx("sluicebun", h, "a bun.Tx")
		}
		if tx.Tx == nil {
			return nil, fmt.Errorf("%w: sluicebun: a zero bun.Tx: begin it with db.BeginTx", core.ErrInvalid)
		}
		if err := sluicesql.CheckTxOf(tx.Tx, pool); err != nil {
			return nil, fmt.Errorf("sluicebun: %w", err)
		}
		return Executor(tx), nil
	}
}
