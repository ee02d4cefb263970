package sluicepgx

import (
	"fmt"
	"math"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// TestDecodeMatchesValues: the types rows.decode reads itself come out as
// pgx's own codecs decode them for Values, in the binary format and, for
// text, in both.
func TestDecodeMatchesValues(t *testing.T) {
	m := pgtype.NewMap()
	r := &rows{}
	cases := []struct {
		oid    uint32
		format int16
		value  any
	}{
		{pgtype.Int8OID, pgx.BinaryFormatCode, int64(math.MaxInt64)},
		{pgtype.Int8OID, pgx.BinaryFormatCode, int64(math.MinInt64)},
		{pgtype.Int8OID, pgx.BinaryFormatCode, int64(-1)},
		{pgtype.Int4OID, pgx.BinaryFormatCode, int32(math.MinInt32)},
		{pgtype.Int4OID, pgx.BinaryFormatCode, int32(7)},
		{pgtype.Int2OID, pgx.BinaryFormatCode, int16(-300)},
		{pgtype.BoolOID, pgx.BinaryFormatCode, true},
		{pgtype.BoolOID, pgx.BinaryFormatCode, false},
		{pgtype.TextOID, pgx.BinaryFormatCode, "it's é"},
		{pgtype.TextOID, pgx.TextFormatCode, "it's é"},
		{pgtype.VarcharOID, pgx.BinaryFormatCode, ""},
		{pgtype.BPCharOID, pgx.TextFormatCode, "ab "},
		{pgtype.NameOID, pgx.BinaryFormatCode, "n"},
	}
	for _, c := range cases {
		src, err := m.Encode(c.oid, c.format, c.value, nil)
		if err != nil {
			t.Fatalf("encode %v: %v", c.value, err)
		}
		if src == nil {
			src = []byte{} // an empty text, not NULL
		}
		dt, _ := m.TypeForOID(c.oid)
		want, err := dt.Codec.DecodeValue(m, c.oid, c.format, src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.decode(&pgconn.FieldDescription{DataTypeOID: c.oid, Format: c.format}, src)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprintf("%T %v", got, got) != fmt.Sprintf("%T %v", want, want) {
			t.Errorf("oid %d format %d: decode = %T %v, pgx decodes %T %v", c.oid, c.format, got, got, want, want)
		}
	}
	if got, err := r.decode(&pgconn.FieldDescription{DataTypeOID: pgtype.Int8OID, Format: pgx.BinaryFormatCode}, nil); got != nil || err != nil {
		t.Errorf("NULL = %v, %v", got, err)
	}
}
