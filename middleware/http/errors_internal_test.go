package sluicehttp

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"
)

func TestWriteError(t *testing.T) {
	w := httptest.NewRecorder()
	w.Header().Set("RateLimit-Limit", "3") // set before: kept
	writeError(w, ErrorBody{Code: "X", Message: "m", Status: 429, RetryAfter: 7})
	want := http.Header{"Ratelimit-Limit": {"3"}, "Content-Type": {"application/json"}, "Retry-After": {"7"}, "X-Retry-After": {"7"}}
	if w.Code != 429 || !reflect.DeepEqual(w.Header(), want) || w.Body.String() != `{"code":"X","message":"m","status":429,"retryAfter":7}`+"\n" {
		t.Errorf("writeError: %d %v %s", w.Code, w.Header(), w.Body)
	}
	w = httptest.NewRecorder()
	writeError(w, ErrorBody{Code: "Y", Message: "n", Status: 503})
	want = http.Header{"Content-Type": {"application/json"}}
	if w.Code != 503 || !reflect.DeepEqual(w.Header(), want) || w.Body.String() != `{"code":"Y","message":"n","status":503}`+"\n" {
		t.Errorf("writeError without RetryAfter: %d %v %s", w.Code, w.Header(), w.Body)
	}
}

func TestSetRateLimit(t *testing.T) {
	h := http.Header{}
	setRateLimit(h, 5, 0, -1)
	if !reflect.DeepEqual(h, http.Header{"Ratelimit-Limit": {"5"}, "Ratelimit-Remaining": {"0"}}) {
		t.Errorf("setRateLimit(5, 0, -1) = %v", h)
	}
}

func TestSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int64{-time.Second: 0, 0: 0, time.Millisecond: 1, time.Second: 1, 1001 * time.Millisecond: 2} {
		if got := seconds(d); got != want {
			t.Errorf("seconds(%v) = %d, want %d", d, got, want)
		}
	}
}
