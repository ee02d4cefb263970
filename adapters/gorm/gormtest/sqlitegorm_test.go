package gormtest_test

import (
	"testing"

	"github.com/sluice-go/sluice/adapters/gorm/sqlitegorm"
	"github.com/sluice-go/sluice/adaptertest"
)

// The conformance suite runs SQLite with adaptertest's options: keep the
// ones sqlitegorm documents the same.
func TestSQLiteOptionsMatchConformance(t *testing.T) {
	if sqlitegorm.Options != adaptertest.SQLiteOptions {
		t.Fatalf("sqlitegorm.Options %q differ from adaptertest.SQLiteOptions %q", sqlitegorm.Options, adaptertest.SQLiteOptions)
	}
}
