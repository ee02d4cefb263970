package sluicehttp_test

import (
	"errors"
	"math"
	"net/http"
	"reflect"
	"testing"
	"time"

	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// The RateLimit-Policy examples of draft-ietf-httpapi-ratelimit-headers-11
// (sections 3, 3.2, B.1.3, B.3.1 and the FAQ), parsed.
func TestParseRateLimitPolicyDraftExamples(t *testing.T) {
	pk1 := []byte{0x70, 0x7b, 0x1d, 0xb1, 0x16, 0xbc, 0xf7}
	for _, tc := range []struct {
		field string
		want  []sluicehttp.QuotaPolicy
	}{
		{`"burst";q=100;w=60,"daily";q=1000;w=86400`, []sluicehttp.QuotaPolicy{
			{Name: "burst", Quota: 100, Window: time.Minute}, {Name: "daily", Quota: 1000, Window: 24 * time.Hour}}},
		{`"default";q=100;w=10`, []sluicehttp.QuotaPolicy{{Name: "default", Quota: 100, Window: 10 * time.Second}}},
		{`"permin";q=50;w=60,"perhr";q=1000;w=3600`, []sluicehttp.QuotaPolicy{
			{Name: "permin", Quota: 50, Window: time.Minute}, {Name: "perhr", Quota: 1000, Window: time.Hour}}},
		{`"peruser";q=100;w=60;pk=:cHsdsRa894==:`, []sluicehttp.QuotaPolicy{
			{Name: "peruser", Quota: 100, Window: time.Minute, PartitionKey: pk1}}},
		{`"peruser";q=65535;qu="content-bytes";w=10;pk=:sdfjLJUOUH==:`, []sluicehttp.QuotaPolicy{
			{Name: "peruser", Quota: 65535, Unit: "content-bytes", Window: 10 * time.Second,
				PartitionKey: []byte{0xb1, 0xd7, 0xe3, 0x2c, 0x95, 0x0e, 0x50}}}},
		{`"hour";q=1000;w=3600, "day";q=5000;w=86400`, []sluicehttp.QuotaPolicy{
			{Name: "hour", Quota: 1000, Window: time.Hour}, {Name: "day", Quota: 5000, Window: 24 * time.Hour}}},
		{`"sliding";q=100;w=60;burst=1000`, []sluicehttp.QuotaPolicy{{Name: "sliding", Quota: 100, Window: time.Minute}}},
		// Draft 12 allows a Token as the name, as in an earlier edit of the draft's source.
		{`burst;q=100;w=60,"daily";q=1000;w=86400`, []sluicehttp.QuotaPolicy{
			{Name: "burst", Quota: 100, Window: time.Minute}, {Name: "daily", Quota: 1000, Window: 24 * time.Hour}}},
		{`"new";q=5;w=1;sluice-shadow`, []sluicehttp.QuotaPolicy{{Name: "new", Quota: 5, Window: time.Second, Shadow: true}}},
	} {
		got, err := sluicehttp.ParseRateLimitPolicy(hdr("RateLimit-Policy", tc.field))
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v, %v\nwant %+v", tc.field, got, err, tc.want)
		}
	}
	// The FAQ's two field lines are one list.
	got, err := sluicehttp.ParseRateLimitPolicy(hdr("RateLimit-Policy", `"sliding";q=100;w=60;burst=1000`,
		"RateLimit-Policy", `"fixed";q=5000;w=3600;burst=0`))
	want := []sluicehttp.QuotaPolicy{{Name: "sliding", Quota: 100, Window: time.Minute}, {Name: "fixed", Quota: 5000, Window: time.Hour}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("two lines: got %+v, %v", got, err)
	}
}

// The RateLimit examples of draft-ietf-httpapi-ratelimit-headers-11
// (sections 4, 4.2, 6, 7, 8.5, the appendices and the FAQ), parsed.
func TestParseRateLimitDraftExamples(t *testing.T) {
	for _, tc := range []struct {
		field string
		want  []sluicehttp.ServiceLimit
	}{
		{`"default";r=50;t=30`, []sluicehttp.ServiceLimit{{Name: "default", Remaining: 50, Reset: 30 * time.Second, HasReset: true}}},
		{`"default";r=999;pk=:dHJpYWwxMjEzMjM=:`, []sluicehttp.ServiceLimit{{Name: "default", Remaining: 999, PartitionKey: []byte("trial121323")}}},
		{`"default";r=300000000;t=60;pk=:QXBwLTk5OQ==:`, []sluicehttp.ServiceLimit{
			{Name: "default", Remaining: 300000000, Reset: time.Minute, HasReset: true, PartitionKey: []byte("App-999")}}},
		{`"problemPolicy";r=0;t=10`, []sluicehttp.ServiceLimit{{Name: "problemPolicy", Reset: 10 * time.Second, HasReset: true}}},
		{`"default";r=1;t=7`, []sluicehttp.ServiceLimit{{Name: "default", Remaining: 1, Reset: 7 * time.Second, HasReset: true}}},
		{`"daily";r=1;t=86400`, []sluicehttp.ServiceLimit{{Name: "daily", Remaining: 1, Reset: 24 * time.Hour, HasReset: true}}},
		{`"somepolicy";r=10000;t=10`, []sluicehttp.ServiceLimit{{Name: "somepolicy", Remaining: 10000, Reset: 10 * time.Second, HasReset: true}}},
		{`"dayLimit";r=100;t=36000`, []sluicehttp.ServiceLimit{{Name: "dayLimit", Remaining: 100, Reset: 10 * time.Hour, HasReset: true}}},
		{`"dynamic";r=15;t=40`, []sluicehttp.ServiceLimit{{Name: "dynamic", Remaining: 15, Reset: 40 * time.Second, HasReset: true}}},
		{`"default";r=50;t=60`, []sluicehttp.ServiceLimit{{Name: "default", Remaining: 50, Reset: time.Minute, HasReset: true}}},
		// "sliding";q=12;r=6;t=1 of the appendix: q is a comment here.
		{`"sliding";q=12;r=6;t=1`, []sluicehttp.ServiceLimit{{Name: "sliding", Remaining: 6, Reset: time.Second, HasReset: true}}},
		{`"burst";r=50;t=30, "new";r=0;t=12;sluice-shadow`, []sluicehttp.ServiceLimit{
			{Name: "burst", Remaining: 50, Reset: 30 * time.Second, HasReset: true},
			{Name: "new", Reset: 12 * time.Second, HasReset: true, Shadow: true}}},
	} {
		got, err := sluicehttp.ParseRateLimit(hdr("RateLimit", tc.field))
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v, %v\nwant %+v", tc.field, got, err, tc.want)
		}
	}
}

// A malformed field is an error wrapping ErrMalformed and no member, as
// the draft says a client must ignore it; never a panic.
func TestParseMalformed(t *testing.T) {
	for _, field := range []string{
		`"default";r=-1;t=5`, `"default";t=5`, `"default";r=5;t=-1`, `"default";r=1.5`, `"default";r="1"`,
		`"default";r=1,`, `,"default";r=1`, `"default";r=1;;t=1`, `"default" r=1`, `("a" "b");r=1`,
		`1;r=1`, `"unterminated;r=1`, `"bad\escape";r=1`, `"default";r=1;pk=:not base64!:`,
		`"default";r=1;pk="s"`, `"default";r=1234567890123456`, `"default";R=1`, `"default";r=1;t=?2`,
		"\"tab\there\";r=1", `"default";r=1;t=1;x=%"%ZZ"`, `"default";r=1;x=@1.5`, `"a";r=1 "b";r=2`,
	} {
		got, err := sluicehttp.ParseRateLimit(hdr("RateLimit", field))
		if !errors.Is(err, sluicehttp.ErrMalformed) || got != nil {
			t.Errorf("RateLimit: %s: got %+v, %v; want ErrMalformed", field, got, err)
		}
	}
	for _, field := range []string{`"p";w=60`, `"p";q=-1`, `"p";q=1;w=0`, `"p";q=1;w=1.0`, `"p";q=1;qu=requests`, `"p";q=1;pk=1`} {
		got, err := sluicehttp.ParseRateLimitPolicy(hdr("RateLimit-Policy", field))
		if !errors.Is(err, sluicehttp.ErrMalformed) || got != nil {
			t.Errorf("RateLimit-Policy: %s: got %+v, %v; want ErrMalformed", field, got, err)
		}
	}
	// Parameters of every other type are read and ignored.
	got, err := sluicehttp.ParseRateLimit(hdr("RateLimit", `"a";r=1;x=?0;y=1.25;z=tok/en:x;d=@1659578233;s=%"f%c3%bc"`))
	if err != nil || len(got) != 1 || got[0].Remaining != 1 {
		t.Errorf("other parameters: %+v, %v", got, err)
	}
	// A t beyond a time.Duration is the longest one.
	got, err = sluicehttp.ParseRateLimit(hdr("RateLimit", `"a";r=0;t=999999999999999`))
	if err != nil || got[0].Reset != math.MaxInt64 {
		t.Errorf("huge t: %+v, %v", got, err)
	}
	if got, err := sluicehttp.ParseRateLimit(http.Header{}); got != nil || err != nil {
		t.Errorf("absent: %+v, %v", got, err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2019, 8, 5, 9, 27, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{hdr("Retry-After", "20"), 20 * time.Second, true},
		{hdr("Retry-After", " 0 "), 0, true},
		// Appendix B.1.4: a date, read against the response's Date.
		{hdr("Retry-After", "Mon, 05 Aug 2019 09:27:05 GMT", "Date", "Mon, 05 Aug 2019 09:27:00 GMT"), 5 * time.Second, true},
		{hdr("Retry-After", "Mon, 05 Aug 2019 09:27:05 GMT", "Date", "garbage"), 5 * time.Second, true},
		{hdr("Retry-After", "Mon, 05 Aug 2019 09:26:05 GMT"), 0, true},
		{hdr("Retry-After", "99999999999999999999999"), math.MaxInt64, true},
		{hdr("Retry-After", "-5"), 0, false},
		{hdr("Retry-After", "1.5"), 0, false},
		{hdr("Retry-After", "soon"), 0, false},
		{http.Header{}, 0, false},
	} {
		got, ok := sluicehttp.ParseRetryAfter(tc.h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%v: got %v, %t; want %v, %t", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParseFields: whatever the fields hold, parsing never panics, a
// parsed member's values are in range, and a Transport never waits more
// than its MaxWait.
func FuzzParseFields(f *testing.F) {
	for _, s := range []string{
		`"burst";q=100;w=60,"daily";q=1000;w=86400`, `"default";r=50;t=30`, `"peruser";q=65535;qu="content-bytes";w=10;pk=:sdfjLJUOUH==:`,
		`"default";r=999;pk=:dHJpYWwxMjEzMjM=:`, `"a";r=0;t=999999999999999`, `("a" "b");r=1`, `"a";r=1;s=%"f%c3%bc"`,
		`"a\"b";r=-0`, `burst;r=1;t=1`, `"x";r=1;t=1;sluice-shadow`, `99999999999999999999`, "Mon, 05 Aug 2019 09:27:05 GMT", "",
	} {
		f.Add(s, s, s)
	}
	f.Fuzz(func(t *testing.T, limit, policy, retry string) {
		h := hdr("RateLimit", limit, "RateLimit-Policy", policy, "Retry-After", retry)
		ls, err := sluicehttp.ParseRateLimit(h)
		if err != nil && ls != nil {
			t.Fatalf("members and an error: %+v, %v", ls, err)
		}
		for _, l := range ls {
			if l.Remaining < 0 || l.Reset < 0 || !l.HasReset && l.Reset != 0 {
				t.Fatalf("out of range: %+v", l)
			}
		}
		ps, err := sluicehttp.ParseRateLimitPolicy(h)
		if err != nil && ps != nil {
			t.Fatalf("members and an error: %+v, %v", ps, err)
		}
		for _, p := range ps {
			if p.Quota < 0 || p.Window < 0 {
				t.Fatalf("out of range: %+v", p)
			}
		}
		if d, ok := sluicehttp.ParseRetryAfter(h, t0); d < 0 || !ok && d != 0 {
			t.Fatalf("Retry-After %v, %t", d, ok)
		}
		checkTransportBound(t, h)
	})
}
