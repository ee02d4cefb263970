package core

import "github.com/sluice-go/sluice/core/driver"

// The logical names of the built-in models.
const (
	ModelRateLimit    = "rateLimit"
	ModelAPIKey       = "apikey"
	ModelRerolledKey  = "rerolledKey"
	ModelAPIKeyLimit  = "apikeyLimit"
	ModelAPIKeyRefill = "apikeyRefill"
)

// Model is a logical model: a name and its fields, the first being the primary key.
//
// A model's fields are [driver.Field]s, each of a logical type
// (driver.TypeString, driver.TypeInt, driver.TypeBool or driver.TypeTime) that each adapter and
// the generator map to a column type of its dialect: integers are int64
// everywhere; times are instants stored in UTC with millisecond precision
// (timestamptz on PostgreSQL, DATETIME(3) on MySQL, fixed-width ISO-8601
// text on SQLite).
type Model struct {
	Name    string
	Fields  []driver.Field
	Comment string
	// Optional marks a model that only some features need, so that a
	// database may lack its table: [DB.CheckSchema] without models named
	// leaves it out (the feature checks it by name), while
	// [DB.CreateTables] and the generator make it like any other.
	Optional bool
}

// rateLimitModel returns the rateLimit model (SPEC section 5): one counter per
// key, with the start of its window as epoch milliseconds.
func rateLimitModel() Model {
	return Model{Name: ModelRateLimit, Comment: "one rate-limit counter per key", Fields: []driver.Field{
		{Name: "id", Type: driver.TypeInt, Primary: true},
		{Name: "key", Type: driver.TypeString, Unique: true, Size: 255, Comment: "the limited subject, such as client IP and path"},
		{Name: "count", Type: driver.TypeInt, Default: int64(0), Comment: "requests counted in the current window"},
		{Name: "lastRequest", Type: driver.TypeInt, Default: int64(0), Index: true, Comment: "epoch milliseconds: the window start (or the last allowed request with Better Auth semantics)"},
	}}
}

// apiKeyModel returns the apikey model (SPEC section 6).
func apiKeyModel() Model {
	return Model{Name: ModelAPIKey, Comment: "one API key, stored as its hash", Fields: []driver.Field{
		{Name: "id", Type: driver.TypeInt, Primary: true},
		{Name: "configId", Type: driver.TypeString, Default: "default", Index: true, Size: 255, Comment: "which key configuration issued the key"},
		{Name: "name", Type: driver.TypeString, Nullable: true},
		{Name: "start", Type: driver.TypeString, Nullable: true, Comment: "the first characters of the key, for display"},
		{Name: "prefix", Type: driver.TypeString, Nullable: true},
		{Name: "key", Type: driver.TypeString, Unique: true, Size: 255, Comment: "SHA-256 of the key, base64url without padding"},
		{Name: "referenceId", Type: driver.TypeString, Index: true, Size: 255, Comment: "the owner of the key, such as a user id"},
		{Name: "enabled", Type: driver.TypeBool, Default: true},
		{Name: "rateLimitEnabled", Type: driver.TypeBool, Default: true},
		{Name: "rateLimitTimeWindow", Type: driver.TypeInt, Nullable: true, Comment: "milliseconds"},
		{Name: "rateLimitMax", Type: driver.TypeInt, Nullable: true},
		{Name: "requestCount", Type: driver.TypeInt, Default: int64(0), Comment: "requests counted in the current rate-limit window"},
		{Name: "remaining", Type: driver.TypeInt, Nullable: true, Comment: "quota left; NULL for unlimited"},
		{Name: "refillInterval", Type: driver.TypeInt, Nullable: true, Comment: "milliseconds"},
		{Name: "refillAmount", Type: driver.TypeInt, Nullable: true},
		{Name: "lastRefillAt", Type: driver.TypeTime, Nullable: true},
		{Name: "lastRequest", Type: driver.TypeTime, Nullable: true, Comment: "start of the current rate-limit window"},
		{Name: "expiresAt", Type: driver.TypeTime, Nullable: true},
		{Name: "createdAt", Type: driver.TypeTime},
		{Name: "updatedAt", Type: driver.TypeTime},
		{Name: "permissions", Type: driver.TypeString, Nullable: true, Comment: "JSON"},
		{Name: "metadata", Type: driver.TypeString, Nullable: true, Comment: "JSON"},
	}}
}

// rerolledKeyModel returns the rerolledKey model: the earlier hash of a
// rerolled API key, which still opens the key until expiresAt (its grace
// period). It is a table of its own, so an apikey table shared with a
// Better Auth deployment keeps its columns; a deployment without it works
// as before, and only rerolling needs it.
func rerolledKeyModel() Model {
	return Model{Name: ModelRerolledKey, Optional: true, Comment: "an earlier hash of a rerolled API key, valid until its grace period ends", Fields: []driver.Field{
		{Name: "id", Type: driver.TypeInt, Primary: true},
		{Name: "key", Type: driver.TypeString, Unique: true, Size: 255, Comment: "SHA-256 of the earlier key, base64url without padding"},
		{Name: "keyId", Type: driver.TypeInt, Index: true, Comment: "the id of the apikey row the earlier key opens"},
		{Name: "expiresAt", Type: driver.TypeTime, Index: true, Comment: "the end of the grace period"},
		{Name: "createdAt", Type: driver.TypeTime},
	}}
}

// apiKeyLimitModel returns the apikeyLimit model: one named rate limit
// (such as "tokens") of an API key, or of an owner, shared by all the
// owner's keys, with its counter. Like rerolledKey it is a table of its
// own, which only keys with named limits need.
func apiKeyLimitModel() Model {
	return Model{Name: ModelAPIKeyLimit, Optional: true, Comment: "one named rate limit of an API key, with its counter", Fields: []driver.Field{
		{Name: "id", Type: driver.TypeInt, Primary: true},
		{Name: "key", Type: driver.TypeString, Unique: true, Size: 255, Comment: "id:name for a key's limit, o:hash:name for an owner's (hash: SHA-256 of the owner)"},
		{Name: "keyId", Type: driver.TypeInt, Index: true, Comment: "the id of the apikey row the limit belongs to; 0 for an owner's"},
		{Name: "owner", Type: driver.TypeString, Nullable: true, Index: true, Size: 255, Comment: "the owner (an apikey referenceId) whose keys share the limit; NULL for a key's own"},
		{Name: "name", Type: driver.TypeString},
		{Name: "max", Type: driver.TypeInt, Comment: "the most units per window"},
		{Name: "window", Type: driver.TypeInt, Comment: "milliseconds"},
		{Name: "count", Type: driver.TypeInt, Default: int64(0), Comment: "units counted in the current window"},
		{Name: "windowStart", Type: driver.TypeInt, Default: int64(0), Comment: "epoch milliseconds: the start of the current window; 0 for none yet"},
	}}
}

// apiKeyRefillModel returns the apikeyRefill model: the anchor of an API
// key's refill anchored to the calendar (day of month, time of day, zone).
// It is a table of its own, which only keys with such refills need: the
// apikey row keeps refillAmount with refillInterval NULL, so that Better
// Auth, sharing that table, sees no refill and never applies one itself.
func apiKeyRefillModel() Model {
	return Model{Name: ModelAPIKeyRefill, Optional: true, Comment: "the anchor of an API key's refill on a day of the month", Fields: []driver.Field{
		{Name: "id", Type: driver.TypeInt, Primary: true},
		{Name: "keyId", Type: driver.TypeInt, Unique: true, Comment: "the id of the apikey row whose refill it anchors"},
		{Name: "day", Type: driver.TypeInt, Comment: "1 to 31; a shorter month refills on its last day"},
		{Name: "timeOfDay", Type: driver.TypeInt, Comment: "milliseconds since local midnight"},
		{Name: "location", Type: driver.TypeString, Size: 255, Comment: "the IANA time zone, such as Europe/Berlin"},
	}}
}

// BuiltinModels returns the rateLimit, apikey, rerolledKey, apikeyLimit
// and apikeyRefill models, in that order.
func BuiltinModels() []Model {
	return []Model{rateLimitModel(), apiKeyModel(), rerolledKeyModel(), apiKeyLimitModel(), apiKeyRefillModel()}
}
