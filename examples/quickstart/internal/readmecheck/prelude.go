// Package readmecheck is where the documents' Go fragments are compiled.
// The test of examples/quickstart (readme_test.go) adds each fragment of
// README.md and docs/*.md to this package as a file of its own, through go
// build -overlay, so that every fragment a reader copies is known to
// compile against this tree.
//
// The variables below stand for what a fragment takes from the reader's
// program (a *gorm.DB, a context, the limiter an earlier fragment made):
// a fragment using a name that is neither declared in it nor here does not
// compile, which is the point. The blank imports keep the packages that
// only fragments import in this module's go.mod.
package readmecheck

import (
	"context"
	"database/sql"
	"net/http"
	"time"

	_ "entgo.io/ent/dialect"           // the ent fragment
	_ "entgo.io/ent/dialect/sql"       // the ent fragment
	_ "github.com/go-sql-driver/mysql" // the bun on MariaDB fragment
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/redis/go-redis/v9"               // the Redis fragment
	_ "github.com/sluice-go/sluice/adapters/bun"   // the bun fragment
	_ "github.com/sluice-go/sluice/adapters/ent"   // the ent fragment
	_ "github.com/sluice-go/sluice/adapters/gorm"  // the gorm fragments
	_ "github.com/sluice-go/sluice/adapters/pgx"   // the pgx fragment
	_ "github.com/sluice-go/sluice/adapters/redis" // the Redis fragment
	_ "github.com/sluice-go/sluice/adapters/sql"   // the database/sql fragment
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	_ "github.com/sluice-go/sluice/core/apikey" // the API-key fragment
	"github.com/sluice-go/sluice/core/ratelimit"
	_ "github.com/sluice-go/sluice/middleware/http" // the HTTP fragments
	_ "github.com/sluice-go/sluice/observe/otel"    // the Observability fragment
	"github.com/uptrace/bun"
	_ "github.com/uptrace/bun/dialect/mysqldialect" // the bun on MariaDB fragment
	_ "gorm.io/driver/postgres"                     // the gorm on PostgreSQL fragment
	"gorm.io/gorm"
	_ "modernc.org/sqlite" // the README's SQLite fragment
)

// What the README's fragments use without declaring it.
var (
	ctx        context.Context
	gormDB     *gorm.DB
	bunDB      *bun.DB
	sqlDB      *sql.DB
	pool       *pgxpool.Pool
	db         *core.DB
	limiter    *ratelimit.Limiter
	api        http.Handler // the application's handler behind a middleware
	id         int64
	now        time.Time
	newHarness adaptertest.HarnessMaker
)
