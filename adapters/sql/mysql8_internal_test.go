package sluicesql

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/sluice-go/sluice/core"
)

// MySQL 8 has no INSERT … RETURNING. Its Create path (insert, then
// LAST_INSERT_ID() and a read by primary key in one transaction) runs here
// on MariaDB with the feature turned off.
func TestCreateWithoutInsertReturning(t *testing.T) {
	dsn := os.Getenv("SLUICE_MYSQL_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("MySQL/MariaDB is required in CI: set SLUICE_MYSQL_DSN")
		}
		t.Skip("MySQL/MariaDB not configured: set SLUICE_MYSQL_DSN to run this test")
	}
	ctx := t.Context()
	sdb, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	a, err := NewDB(ctx, sdb, MySQL)
	if err != nil {
		t.Fatal(err)
	}
	a.e.features.InsertReturning = false
	name := "sluice_mysql8_" + strconv.Itoa(os.Getpid()) + "_" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	s := core.MustSchema(core.Naming{Tables: map[string]string{core.ModelRateLimit: name, core.ModelAPIKey: name + "_k"}})
	rl, _ := s.Table(core.ModelRateLimit)
	if _, err := sdb.ExecContext(ctx, "CREATE TABLE `"+name+"` (`id` BIGINT AUTO_INCREMENT PRIMARY KEY, `key` VARCHAR(255) NOT NULL UNIQUE, `count` BIGINT NOT NULL DEFAULT 0, `last_request` BIGINT NOT NULL DEFAULT 0)"); err != nil {
		t.Fatal(err)
	}
	defer sdb.ExecContext(context.Background(), "DROP TABLE `"+name+"`")
	db, err := core.New(a, core.WithSchema(s))
	if err != nil {
		t.Fatal(err)
	}
	for i, key := range []string{"a", "b"} {
		row, err := db.Create(ctx, rl.Model, map[string]any{"key": key, "count": int64(i + 5)})
		if err != nil || row.Text("key") != key || row.Int("count") != int64(i+5) || row.Int("id") == 0 {
			t.Fatalf("Create %q: %v %v", key, row, err)
		}
	}
	if _, err := db.Create(ctx, rl.Model, map[string]any{"key": "a"}); !errors.Is(err, core.ErrConflict) {
		t.Fatalf("duplicate: %v, want ErrConflict", err)
	}
}
