package adaptertest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSerializableCasesCatchUnretriedFailures is the proof for the
// serializable suite: an adapter that hands its callers the aborts of
// concurrent writers (a serialization failure or a deadlock, SQLSTATE
// 40001) instead of retrying them fails every case, and the same adapter
// retrying them passes every case.
func TestSerializableCasesCatchUnretriedFailures(t *testing.T) {
	for _, c := range serializableCases() {
		t.Run(c.name, func(t *testing.T) {
			rec := runRecorded(t, Serializable(brokenMaker(deadlockVictims)), c)
			require.False(t, rec.Skipped(), "%v", rec.messages)
			require.True(t, rec.Failed(), "an adapter that returns its writers' aborts passed %s", c.name)
			require.Contains(t, strings.Join(rec.messages, "\n"), "40001")
			t.Logf("caught: %s", rec.summary())
			rec = runRecorded(t, Serializable(brokenMaker(retriedVictims)), c)
			require.False(t, rec.Failed(), "%v", rec.messages)
		})
	}
}

// TestSerializableNeedsTheDeclaration: a harness that does not declare
// Serializable skips every case, with the reason.
func TestSerializableNeedsTheDeclaration(t *testing.T) {
	for _, c := range serializableCases() {
		require.Contains(t, c.needs.lacking(severalPools|transactions|nativeIncrement|viaFallback), "does not declare Serializable")
	}
}

func TestSerializableDSN(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u@h:5432/db?sslmode=disable":         "postgres://u@h:5432/db?options=-c%20default_transaction_isolation%3Dserializable&sslmode=disable",
		"postgresql://h/db?options=-c%20search_path%3Dx": "postgresql://h/db?options=-c%20search_path%3Dx%20-c%20default_transaction_isolation%3Dserializable",
		"host=h dbname=db":                               "host=h dbname=db options='-c default_transaction_isolation=serializable'",
	} {
		got, err := SerializableDSN(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := SerializableDSN("host=h options='-c x=y'")
	require.ErrorContains(t, err, "options of its own")
}
