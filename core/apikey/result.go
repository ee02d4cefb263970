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
	// DeniedBy names the limit that denied a verification answered
	// CodeRateLimited or CodeUsageExceeded, "" for every other answer:
	//   - "rateLimit": the key's rate limit ([CreateParams.RateLimit]; a
	//     key created without one has the manager's default, 10
	//     verifications per 24 hours unless [WithDefaultRateLimit] says
	//     otherwise);
	//   - "remaining": the key's quota ([CreateParams.Remaining]);
	//   - "limit:NAME": the key's named limit NAME ([LimitCost]);
	//   - "ownerLimit:NAME": the named limit NAME of the key's owner,
	//     shared by all their keys ([Manager.SetOwnerLimits]).
	DeniedBy string
}

// denied is a denial with code; limit and owner name the named limit that
// denied, as keystore.Plan and keystore.Result do.
func denied(code Code, tryAgainMs int64, limit string, owner bool, k *Key) Result {
	r := Result{Code: code, Status: code.Status(), TryAgainIn: time.Duration(tryAgainMs) * time.Millisecond, Key: k}
	switch {
	case code == CodeUsageExceeded:
		r.DeniedBy = "remaining"
	case code != CodeRateLimited:
	case limit == "":
		r.DeniedBy = "rateLimit"
	case owner:
		r.DeniedBy = "ownerLimit:" + limit
	default:
		r.DeniedBy = "limit:" + limit
	}
	return r
}

// invalid is the answer for a key that no stored key answers to.
func invalid() Result { return denied(CodeInvalid, 0, "", false, nil) }

func allowed(k *Key) Result { return Result{Valid: true, Status: http.StatusOK, Key: k} }
