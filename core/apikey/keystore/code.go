package keystore

// Code is a claim's denial: apikey reports it as the Result's code. The
// values are Better Auth's.
type Code string

// The denials of a claim, in the order [Apply]'s rules check them.
const (
	Disabled      Code = "KEY_DISABLED"
	Expired       Code = "KEY_EXPIRED"
	Forbidden     Code = "INSUFFICIENT_PERMISSIONS"
	UsageExceeded Code = "USAGE_EXCEEDED"
	RateLimited   Code = "RATE_LIMITED"
)
