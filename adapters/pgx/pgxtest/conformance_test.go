package pgxtest_test

import (
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
)

// TestConformance runs sluice's conformance and race suite on PostgreSQL
// (SLUICE_POSTGRES_DSN), every adapter and peer on a pgxpool of its own.
func TestConformance(t *testing.T) { adaptertest.Run(t, maker) }
