package core

// StorableText reports why s is not text that every storage keeps byte
// for byte, or nil: invalid UTF-8 (PostgreSQL refuses it, MySQL refuses or
// truncates it, encoding/json rewrites it to U+FFFD) and NUL (PostgreSQL
// refuses it in text, C-string APIs cut at it). The error names the
// offending byte's offset, never s itself. It is the rule core.DB applies
// to every string it writes; packages that store a caller's text some
// other way (as JSON, in a key-value store) apply it themselves, so that
// every storage refuses the same strings.
func StorableText(s string) error { return storableString(s) }
