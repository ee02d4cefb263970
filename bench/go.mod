module github.com/sluice-go/sluice/bench

go 1.26.0

require (
	entgo.io/ent v0.14.5
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/go-sql-driver/mysql v1.10.1
	github.com/jackc/pgx/v5 v5.12.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/sethvargo/go-limiter v0.7.1
	github.com/sluice-go/sluice/adapters/bun v0.0.0-00010101000000-000000000000
	github.com/sluice-go/sluice/adapters/ent v0.0.0-00010101000000-000000000000
	github.com/sluice-go/sluice/adapters/gorm v0.0.0-00010101000000-000000000000
	github.com/sluice-go/sluice/adapters/pgx v0.0.0-00010101000000-000000000000
	github.com/sluice-go/sluice/adapters/redis v0.0.0-00010101000000-000000000000
	github.com/sluice-go/sluice/adapters/sql v0.0.0-00010101000000-000000000000
	github.com/sluice-go/sluice/core v0.0.0-00010101000000-000000000000
	github.com/sluice-go/sluice/gen v0.0.0-00010101000000-000000000000
	github.com/throttled/throttled/v2 v2.15.0
	github.com/ulule/limiter/v3 v3.11.2
	github.com/uptrace/bun v1.3.0
	github.com/uptrace/bun/dialect/mysqldialect v1.3.0
	github.com/uptrace/bun/dialect/pgdialect v1.3.0
	github.com/uptrace/bun/dialect/sqlitedialect v1.3.0
	go.uber.org/ratelimit v0.3.1
	gorm.io/driver/mysql v1.6.0
	gorm.io/driver/postgres v1.6.3
	gorm.io/gorm v1.31.2
	modernc.org/sqlite v1.62.0
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/benbjohnson/clock v1.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dustin/go-humanize v1.1.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/golang-lru v0.5.4 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/jinzhu/now v1.1.5 // indirect
	github.com/libtnb/sqlite v1.3.0 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/ncruces/go-strftime v1.1.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/puzpuzpuz/xsync/v3 v3.5.1 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	github.com/tmthrgd/go-hex v0.0.0-20190904060850-447a3041c3bc // indirect
	github.com/vmihailenco/msgpack/v5 v5.4.1 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	modernc.org/libc v1.80.1 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
)

replace (
	github.com/sluice-go/sluice/adapters/bun => ../adapters/bun
	github.com/sluice-go/sluice/adapters/ent => ../adapters/ent
	github.com/sluice-go/sluice/adapters/gorm => ../adapters/gorm
	github.com/sluice-go/sluice/adapters/pgx => ../adapters/pgx
	github.com/sluice-go/sluice/adapters/redis => ../adapters/redis
	github.com/sluice-go/sluice/adapters/sql => ../adapters/sql
	github.com/sluice-go/sluice/adaptertest => ../adaptertest
	github.com/sluice-go/sluice/core => ../core
	github.com/sluice-go/sluice/gen => ../gen
)
