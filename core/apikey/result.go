package apikey

import (
	"net/http"
	"time"

	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// Code identifies the outcome of a verification: "" when valid, else a
// denial. The values are stable and are those of Better Auth, so clients
// can share their handling. Code.Status is the HTTP status and
// Code.Message a sentence for people.
type Code = keystore.Code

// The denial codes. A successful verification has the empty code.
const (
	CodeInvalid       = keystore.Invalid // unknown key (or deleted during verification)
	CodeDisabled      = keystore.Disabled
	CodeExpired       = keystore.Expired
	CodeUsageExceeded = keystore.UsageExceeded // quota exhausted
	CodeRateLimited   = keystore.RateLimited   // the key's rate limit or one of its named limits reached
	// CodeForbidden: the key lacks a permission the request requires (see
	// [Permissions] and [AnyPermission]).
	CodeForbidden = keystore.Forbidden
)

// Result is the outcome of [Manager.Verify]. A denial is a Result with
// Valid == false, never an error.
type Result struct {
	Valid      bool
	Code       Code          // "" when valid
	Status     int           // the HTTP status: 200 when valid, else Code.Status()
	TryAgainIn time.Duration // for CodeRateLimited, and CodeUsageExceeded before a refill; 0 otherwise
	// Key is the key after the verification's write when valid, the key as
	// read when denied, and nil when the key is unknown.
	Key *Key
	// Limit names the named limit (see [LimitCost]) that denied with
	// CodeRateLimited; "" for the key's own rate limit and other codes.
	// OwnerLimit says it is the owner's, shared by all their keys (see
	// [Manager.SetOwnerLimits]), rather than the key's.
	Limit      string
	OwnerLimit bool
}

func denied(code Code, tryAgainMs int64, k *Key) Result {
	return Result{Code: code, Status: code.Status(), TryAgainIn: time.Duration(tryAgainMs) * time.Millisecond, Key: k}
}

func allowed(k *Key) Result { return Result{Valid: true, Status: http.StatusOK, Key: k} }
