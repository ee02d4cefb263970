package apikey

import (
	"net/http"
	"time"

	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// Code identifies the outcome of a verification. The values are stable and
// are those of Better Auth, so clients can share their handling.
type Code string

// The denial codes. A successful verification has the empty code.
const (
	CodeInvalid       Code = "INVALID_API_KEY" // unknown key (or deleted during verification)
	CodeDisabled           = Code(keystore.Disabled)
	CodeExpired            = Code(keystore.Expired)
	CodeUsageExceeded      = Code(keystore.UsageExceeded) // quota exhausted
	CodeRateLimited        = Code(keystore.RateLimited)   // per-key rate limit reached
	// CodeForbidden: the key lacks a permission the request requires (see
	// [Permissions] and [AnyPermission]).
	CodeForbidden = Code(keystore.Forbidden)
)

// Status returns the HTTP status for the code: 401 for an invalid,
// disabled or expired key, 403 for a missing permission, 429 for usage
// exceeded and rate limited, 200 for the empty code.
func (c Code) Status() int {
	switch c {
	case "":
		return http.StatusOK
	case CodeForbidden:
		return http.StatusForbidden
	case CodeUsageExceeded, CodeRateLimited:
		return http.StatusTooManyRequests
	}
	return http.StatusUnauthorized
}

// Message returns a human-readable sentence for the code.
func (c Code) Message() string {
	switch c {
	case "":
		return "valid API key"
	case CodeInvalid:
		return "invalid API key"
	case CodeDisabled:
		return "API key is disabled"
	case CodeExpired:
		return "API key has expired"
	case CodeUsageExceeded:
		return "API key usage exceeded"
	case CodeRateLimited:
		return "API key rate limit exceeded"
	case CodeForbidden:
		return "API key lacks a required permission"
	}
	return string(c)
}

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
