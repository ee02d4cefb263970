package core_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/sluice-go/sluice/core"
)

// fakeRows serves fixed rows through the core.Rows interface.
type fakeRows struct {
	cols []string
	data [][]any
	i    int
	err  error
}

func (r *fakeRows) Columns() ([]string, error) { return r.cols, nil }
func (r *fakeRows) Next() bool                 { r.i++; return r.i <= len(r.data) }
func (r *fakeRows) Err() error                 { return r.err }
func (r *fakeRows) Scan(dest ...any) error {
	for j, d := range dest {
		if v := r.data[r.i-1][j]; v != nil {
			*(d.(*any)) = v
		} // a NULL writes nothing here, so only ScanRecords' reset keeps it NULL
	}
	return nil
}

func TestScanRecords(t *testing.T) {
	rows := &fakeRows{cols: []string{"id", "remaining"}, data: [][]any{{int64(1), int64(5)}, {int64(2), nil}}}
	got, err := core.ScanRecords(rows)
	if err != nil {
		t.Fatal(err)
	}
	want := []core.Record{{"id": int64(1), "remaining": int64(5)}, {"id": int64(2), "remaining": nil}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ScanRecords = %v; want %v (a NULL must not inherit the previous row's value)", got, want)
	}
	boom := errors.New("boom")
	if _, err := core.ScanRecords(&fakeRows{cols: []string{"id"}, err: boom}); !errors.Is(err, boom) {
		t.Fatalf("ScanRecords with a failing Err() = %v; want boom", err)
	}
}

func TestSelectsOne(t *testing.T) {
	tbl, _ := core.MustSchema(core.Naming{}).Table(core.ModelRateLimit)
	for _, c := range []struct {
		where []core.Where
		want  bool
	}{
		{[]core.Where{core.Eq("key", "k"), core.Lt("count", int64(3))}, true},
		{[]core.Where{core.Eq("id", int64(1))}, true},
		{[]core.Where{core.Eq("key", nil)}, false},
		{[]core.Where{core.Ne("key", "k")}, false},
		{[]core.Where{core.Eq("count", int64(1))}, false},
		{nil, false},
	} {
		if got := tbl.SelectsOne(c.where); got != c.want {
			t.Errorf("SelectsOne(%v) = %v; want %v", c.where, got, c.want)
		}
	}
}

func TestParseInt(t *testing.T) {
	for _, v := range []any{int64(7), int32(7), uint64(7), []byte("7"), "7"} {
		if n, err := core.ParseInt(v); n != 7 || err != nil {
			t.Errorf("ParseInt(%#v) = %d, %v; want 7", v, n, err)
		}
	}
	if _, err := core.ParseInt(uint64(1 << 63)); err == nil {
		t.Error("ParseInt(2^63) succeeded; want an overflow error")
	}
}
