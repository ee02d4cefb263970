package keystore

// Code is a verification's outcome, and apikey.Code is this type: a claim
// answers the empty code or one of the denials below, which apikey reports
// unchanged. The values are Better Auth's, so clients can share their
// handling.
type Code string

// The denials of a verification: Invalid for a key that no stored key
// answers to (a claim's Found == false), then those of a claim, in the
// order [Apply]'s rules check them. apikey names them CodeInvalid,
// CodeDisabled, CodeExpired, CodeForbidden, CodeUsageExceeded and
// CodeRateLimited.
const (
	Invalid       Code = "INVALID_API_KEY"
	Disabled      Code = "KEY_DISABLED"
	Expired       Code = "KEY_EXPIRED"
	Forbidden     Code = "INSUFFICIENT_PERMISSIONS"
	UsageExceeded Code = "USAGE_EXCEEDED"
	RateLimited   Code = "RATE_LIMITED"
)

// Status returns the HTTP status for the code: 200 for the empty code,
// 403 for Forbidden, 429 for UsageExceeded and RateLimited, and 401 for
// every other (a disabled, expired or unknown key). The numbers are
// written out so that the decision packages need no net/http.
func (c Code) Status() int {
	switch c {
	case "":
		return 200
	case Forbidden:
		return 403
	case UsageExceeded, RateLimited:
		return 429
	}
	return 401
}

// Message returns a human-readable sentence for the code; a code it does
// not know reads as itself.
func (c Code) Message() string {
	switch c {
	case "":
		return "valid API key"
	case Invalid:
		return "invalid API key"
	case Disabled:
		return "API key is disabled"
	case Expired:
		return "API key has expired"
	case UsageExceeded:
		return "API key usage exceeded"
	case RateLimited:
		return "API key rate limit exceeded"
	case Forbidden:
		return "API key lacks a required permission"
	}
	return string(c)
}
