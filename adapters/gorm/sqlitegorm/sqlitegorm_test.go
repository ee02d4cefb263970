package sqlitegorm_test

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/adapters/gorm/sqlitegorm"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	moderncsqlite "modernc.org/sqlite"
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
	// That Options match adaptertest's, with which the conformance suite
	// runs SQLite, is checked in gormtest: this module does not require
	// adaptertest.
}

// Linking this package must not flip modernc.org/sqlite's process-wide
// switches that libtnb/sqlite's init turns on: the bun and ent adapters in
// the same program share the driver and expect its upstream defaults.
func TestLeavesModerncDefaults(t *testing.T) {
	if moderncsqlite.StrictPragmasEnabled() {
		t.Error("StrictPragmas is on")
	}
	if moderncsqlite.FdatasyncEnabled() {
		t.Error("Fdatasync is on")
	}
	if _, set := os.LookupEnv("MODERNC_SQLITE_OFD_LOCK"); !set && moderncsqlite.OFDLockingEnabled() {
		t.Error("OFD locking is on although MODERNC_SQLITE_OFD_LOCK is unset")
	}
}

type widget struct {
	ID   int64  `gorm:"primaryKey;autoIncrement"`
	Name string `gorm:"uniqueIndex;not null"`
	Size int    `gorm:"default:3"`
}

// Dialector works on a pool opened elsewhere: gorm runs on that very pool,
// AutoMigrate creates the table and its index, inserts get their id back,
// and with TranslateError a unique violation from modernc.org/sqlite is
// gorm.ErrDuplicatedKey.
func TestDialectorOnOpenPool(t *testing.T) {
	pool, err := sql.Open("sqlite", sqlitegorm.DSN(filepath.Join(t.TempDir(), "app.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	db, err := gorm.Open(sqlitegorm.Dialector(pool), &gorm.Config{Logger: logger.Discard, TranslateError: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := db.DB(); got != pool {
		t.Fatalf("gorm runs on %p, not on the pool %p it was given", got, pool)
	}
	if err := db.AutoMigrate(&widget{}); err != nil {
		t.Fatal(err)
	}
	// A second AutoMigrate of the same model must find nothing to change.
	if err := db.AutoMigrate(&widget{}); err != nil {
		t.Fatalf("second AutoMigrate: %v", err)
	}
	if !db.Migrator().HasIndex(&widget{}, "Name") {
		t.Error("AutoMigrate made no unique index on name")
	}
	a, b := widget{Name: "a"}, widget{Name: "b"}
	if err := db.Create(&a).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&b).Error; err != nil {
		t.Fatal(err)
	}
	if a.ID == 0 || b.ID == a.ID {
		t.Fatalf("ids %d and %d, want two distinct non-zero ids", a.ID, b.ID)
	}
	var got widget
	if err := db.First(&got, b.ID).Error; err != nil {
		t.Fatal(err)
	}
	if got.Name != "b" || got.Size != 3 {
		t.Fatalf("read back %+v, want name b and the default size 3", got)
	}
	if err := db.Create(&widget{Name: "a"}).Error; !errors.Is(err, gorm.ErrDuplicatedKey) {
		t.Fatalf("duplicate name = %v, want gorm.ErrDuplicatedKey", err)
	}
}
