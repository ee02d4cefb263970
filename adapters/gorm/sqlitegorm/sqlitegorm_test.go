package sqlitegorm_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/adapters/gorm/sqlitegorm"
	"github.com/sluice-go/sluice/adaptertest"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

func TestOpenSetsUpConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := sqlitegorm.Open(path, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	pool, _ := db.DB()
	defer pool.Close()
	if name := db.Dialector.Name(); name != "sqlite" {
		t.Fatalf("dialector %q, want sqlite", name)
	}
	for pragma, want := range map[string]string{"busy_timeout": "10000", "journal_mode": "wal", "foreign_keys": "1"} {
		var got string
		if err := db.Raw("PRAGMA " + pragma).Row().Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %q, want %q", pragma, got, want)
		}
	}

	// A transaction takes the write lock at BEGIN (_txlock=immediate): a
	// second writer that does not wait fails to begin while it is open,
	// although the first has not written anything yet.
	tx := db.Begin()
	if tx.Error != nil {
		t.Fatal(tx.Error)
	}
	defer tx.Rollback()
	other, err := sqlitegorm.OpenDSN("file:"+path+"?_pragma=busy_timeout(0)&_txlock=immediate", &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	otherPool, _ := other.DB()
	defer otherPool.Close()
	err = other.Begin().Error
	if err == nil || !strings.Contains(err.Error(), "SQLITE_BUSY") {
		t.Fatalf("second BEGIN IMMEDIATE while the first is open = %v, want SQLITE_BUSY", err)
	}
}

func TestDSN(t *testing.T) {
	if got, want := sqlitegorm.DSN("/tmp/x.db"), "file:/tmp/x.db"+sqlitegorm.Options; got != want {
		t.Fatalf("DSN = %q, want %q", got, want)
	}
	// The conformance suite runs SQLite with adaptertest's options: keep the
	// documented ones the same.
	if sqlitegorm.Options != adaptertest.SQLiteOptions {
		t.Fatalf("Options %q differ from adaptertest.SQLiteOptions %q", sqlitegorm.Options, adaptertest.SQLiteOptions)
	}
}
