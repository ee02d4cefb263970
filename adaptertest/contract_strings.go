package adaptertest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// unstorable are strings no adapter may be handed: invalid UTF-8 (which
// some drivers rewrite to U+FFFD, merging distinct keys) and NUL.
var unstorable = []string{"a\xff\xfe", "a\xfe\xff", "\xc3\x28", "ok\xc3", "\xed\xa0\x80", "k\x00", "\x00"}

const ruleUnstorableStrings = "a string that is not valid UTF-8 or contains NUL is refused with ErrInvalid, naming the field, before anything reaches the adapter, wherever it is given (Create, Set, Update, where): nothing is stored, on every adapter"

func caseUnstorableStrings(t testing.TB, f *Fixture) {
	r := newCounter(t, f, "valid", map[string]any{"label": "l"})
	id := core.Eq("id", r.Int("id"))
	spy := &noIO{}
	spyDB, err := core.New(spy, core.WithSchema(f.Schema))
	require.NoError(t, err)
	for _, s := range unstorable {
		calls := []struct {
			what, field string
			call        func(db *core.DB) error
		}{
			{"Create", "name", func(db *core.DB) error {
				_, err := db.Create(f.Ctx, counterModel, map[string]any{"name": s})
				return err
			}},
			{"Create rateLimit", "key", func(db *core.DB) error {
				_, err := db.Create(f.Ctx, core.ModelRateLimit, map[string]any{"key": s})
				return err
			}},
			{"IncrementOne Set", "label", func(db *core.DB) error {
				_, _, err := db.IncrementOne(f.Ctx, core.IncrementRequest{Model: counterModel, Where: []core.Where{id},
					Increment: map[string]int64{"hits": 1}, Set: map[string]any{"label": s}})
				return err
			}},
			{"IncrementOne where", "name", func(db *core.DB) error {
				_, _, err := db.IncrementOne(f.Ctx, core.IncrementRequest{Model: counterModel, Where: []core.Where{core.Eq("name", s)},
					Increment: map[string]int64{"hits": 1}})
				return err
			}},
			{"Update", "slot", func(db *core.DB) error {
				_, _, err := db.Update(f.Ctx, counterModel, []core.Where{id}, map[string]any{"slot": s})
				return err
			}},
			{"UpdateMany", "label", func(db *core.DB) error {
				_, err := db.UpdateMany(f.Ctx, counterModel, nil, map[string]any{"label": s})
				return err
			}},
			{"FindOne", "label", func(db *core.DB) error {
				_, _, err := db.FindOne(f.Ctx, counterModel, core.In("label", "l", s))
				return err
			}},
			{"DeleteMany", "name", func(db *core.DB) error {
				_, err := db.DeleteMany(f.Ctx, counterModel, core.Ne("name", s))
				return err
			}},
		}
		for _, c := range calls {
			for _, db := range []*core.DB{spyDB, f.DB} {
				err := c.call(db)
				require.ErrorIs(t, err, core.ErrInvalid, "%s with %q", c.what, s)
				assert.Contains(t, err.Error(), fmt.Sprintf("%q", c.field), "%s with %q: the error should name the field", c.what, s)
			}
		}
	}
	assert.Zero(t, spy.calls.Load(), "requests with unstorable strings reached the adapter")
	n, err := f.DB.Count(f.Ctx, counterModel)
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "rows stored")
	n, err = f.DB.Count(f.Ctx, core.ModelRateLimit)
	require.NoError(t, err)
	assert.Zero(t, n, "rate-limit rows stored")
	requireSame(t, r, reread(t, f, counterModel, r.Int("id")), "a refused request changed the row")
}

// distinctKeys differ from "k" (or from each other) in ways a collation
// may ignore: trailing spaces (PAD SPACE), case, Unicode normalisation
// (precomposed é against e + combining acute), width (fullwidth k), and
// 4-byte UTF-8 that a 3-byte charset cannot hold.
var distinctKeys = []string{"k", "k ", "k  ", "K", " k", "\u00e9", "e\u0301", "\uff4b", "k\U0001F600", "k\U0001F601", "\u00df", "ss", "\uFFFD"}

const ruleDistinctStrings = "strings are stored and compared byte for byte: keys that differ only by trailing spaces, by case, by Unicode normalisation or by width are distinct rows under a unique index, each matched only by itself, and every one round-trips unchanged"

func caseDistinctStrings(t testing.TB, f *Fixture) {
	ids := map[string]int64{}
	for i, k := range distinctKeys {
		row, err := f.DB.Create(f.Ctx, core.ModelRateLimit, map[string]any{"key": k, "count": i})
		require.NoError(t, err, "Create key %+q next to %+q: they are distinct keys", k, distinctKeys[:i])
		assert.Equal(t, k, row.Text("key"), "Create returned the key changed")
		ids[k] = row.Int("id")
		newCounter(t, f, k, map[string]any{"slot": k, "hits": i})
	}
	// each key's counter moves on its own
	for i, k := range distinctKeys {
		row := requireWriteModel(t, f, core.ModelRateLimit, []core.Where{core.Eq("key", k)}, map[string]int64{"count": 100})
		assert.Equal(t, ids[k], row.Int("id"), "IncrementOne(key = %q) changed another key's row %q", k, row.Text("key"))
		assert.EqualValues(t, 100+i, row.Int("count"), "key %q", k)
	}
	for i, k := range distinctKeys {
		rows, err := f.DB.FindMany(f.Ctx, core.ModelRateLimit, []core.Where{core.Eq("key", k)}, nil)
		require.NoError(t, err)
		if assert.Len(t, rows, 1, "rows matching key = %q", k) {
			assert.Equal(t, k, rows[0].Text("key"), "the key does not round-trip byte for byte")
			assert.EqualValues(t, 100+i, rows[0].Int("count"), "key %q", k)
		}
		n, err := f.DB.Count(f.Ctx, core.ModelRateLimit, core.In("key", k, "absent"))
		require.NoError(t, err)
		assert.EqualValues(t, 1, n, "rows matching key in (%q)", k)
		n, err = f.DB.Count(f.Ctx, counterModel, core.Eq("name", k))
		require.NoError(t, err)
		assert.EqualValues(t, 1, n, "counters named %q (an indexed, non-unique string)", k)
		row, ok, err := f.DB.FindOne(f.Ctx, counterModel, core.Eq("slot", k))
		require.NoError(t, err)
		if assert.True(t, ok, "slot %q", k) {
			assert.Equal(t, k, row.Text("name"), "the name does not round-trip byte for byte")
			assert.EqualValues(t, i, row.Int("hits"), "FindOne(slot = %q) found another row", k)
		}
	}
	n, err := f.DB.Count(f.Ctx, core.ModelRateLimit)
	require.NoError(t, err)
	assert.EqualValues(t, len(distinctKeys), n, "rate-limit rows")
}
