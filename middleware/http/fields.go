package sluicehttp

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// QuotaPolicy is one member of a RateLimit-Policy field
// (draft-ietf-httpapi-ratelimit-headers, section 3): a policy's name and
// its parameters.
//
//	RateLimit-Policy: "burst";q=100;w=60,"daily";q=1000;w=86400
type QuotaPolicy struct {
	// Name identifies the policy; the RateLimit member of the same name
	// reports its current state.
	Name string
	// Quota (q) is how many quota units the policy allocates.
	Quota int64
	// Window (w) is the policy's time window, whole seconds; 0 when the
	// field does not say.
	Window time.Duration
	// Unit (qu) is the quota unit, such as "requests" (the draft's
	// default, when the field says nothing: Unit is then "") or
	// "content-bytes".
	Unit string
	// PartitionKey (pk) is the partition the quota is allocated to; nil
	// when the field does not say.
	PartitionKey []byte
	// Shadow reports the parameter sluice-shadow: sluice counts this
	// policy and reports it, but never denies by it (shadow mode).
	Shadow bool
}

// ServiceLimit is one member of a RateLimit field
// (draft-ietf-httpapi-ratelimit-headers, section 4): the quota a policy
// has left.
//
//	RateLimit: "burst";r=50;t=30
type ServiceLimit struct {
	// Name is the policy's name, as RateLimit-Policy gives it.
	Name string
	// Remaining (r) is the quota still available.
	Remaining int64
	// Reset (t) is the effective window: within Reset the client can use
	// no more than Remaining. It is 0 when HasReset is false.
	Reset time.Duration
	// HasReset reports whether the member carries t.
	HasReset bool
	// PartitionKey (pk) is the partition the limit applies to; nil when
	// the field does not say.
	PartitionKey []byte
	// Shadow reports the parameter sluice-shadow, as [QuotaPolicy].Shadow.
	Shadow bool
}

// ShadowParam is the parameter sluice adds to the RateLimit-Policy and
// RateLimit members of a shadow rule, one that is counted and reported but
// never denies (a vendor parameter, as the draft asks them to be
// prefixed). Clients that do not know it ignore it, as the draft requires.
const ShadowParam = "sluice-shadow"

// ErrMalformed is wrapped by the errors of [ParseRateLimit] and
// [ParseRateLimitPolicy] for a field that is not what the draft
// describes. The draft says a client must ignore such a field.
var ErrMalformed = errors.New("malformed rate-limit field")

// ParseRateLimitPolicy reads the RateLimit-Policy fields of h (several
// field lines are one list, as RFC 9651 joins them). A field that is not
// a Structured Fields list, or one of whose members is not a quota policy
// item (a name, as a String or a Token, with an Integer q ≥ 0 and, when
// present, an Integer w > 0, a String qu and a Byte Sequence pk), is an
// error wrapping [ErrMalformed] and no policy; other parameters are
// ignored. An absent field is no policy and no error.
func ParseRateLimitPolicy(h http.Header) ([]QuotaPolicy, error) {
	members, err := parseFieldList(h, "RateLimit-Policy")
	if err != nil || len(members) == 0 {
		return nil, err
	}
	out := make([]QuotaPolicy, 0, len(members))
	for i, m := range members {
		p := QuotaPolicy{Name: m.name}
		q, ok := m.params["q"]
		switch {
		case !ok || q.kind != sfInteger || q.i < 0:
			return nil, malformed("RateLimit-Policy", i, "q must be an Integer ≥ 0")
		case !m.integer("w", &p.Window, 1):
			return nil, malformed("RateLimit-Policy", i, "w must be an Integer > 0")
		case !m.str("qu", &p.Unit):
			return nil, malformed("RateLimit-Policy", i, "qu must be a String")
		case !m.bytes("pk", &p.PartitionKey):
			return nil, malformed("RateLimit-Policy", i, "pk must be a Byte Sequence")
		}
		p.Quota, p.Shadow = q.i, m.flag(ShadowParam)
		out = append(out, p)
	}
	return out, nil
}

// ParseRateLimit reads the RateLimit fields of h as
// [ParseRateLimitPolicy] reads RateLimit-Policy: each member a name with
// an Integer r ≥ 0 and, when present, an Integer t ≥ 0 and a Byte
// Sequence pk. A t beyond what a time.Duration holds reads as the longest
// one.
func ParseRateLimit(h http.Header) ([]ServiceLimit, error) {
	members, err := parseFieldList(h, "RateLimit")
	if err != nil || len(members) == 0 {
		return nil, err
	}
	out := make([]ServiceLimit, 0, len(members))
	for i, m := range members {
		l := ServiceLimit{Name: m.name}
		r, ok := m.params["r"]
		switch {
		case !ok || r.kind != sfInteger || r.i < 0:
			return nil, malformed("RateLimit", i, "r must be an Integer ≥ 0")
		case !m.integer("t", &l.Reset, 0):
			return nil, malformed("RateLimit", i, "t must be an Integer ≥ 0")
		case !m.bytes("pk", &l.PartitionKey):
			return nil, malformed("RateLimit", i, "pk must be a Byte Sequence")
		}
		_, l.HasReset = m.params["t"]
		l.Remaining, l.Shadow = r.i, m.flag(ShadowParam)
		out = append(out, l)
	}
	return out, nil
}

// ParseRetryAfter reads h's Retry-After (RFC 9110, section 10.2.3):
// delay-seconds, or an HTTP-date taken relative to the response's Date
// when it has a valid one, else to now. It reports false when the field
// is absent or malformed. A date in the past is a wait of 0; a wait
// beyond what a time.Duration holds reads as the longest one.
func ParseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		return secondsDuration(v), true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if date, err := http.ParseTime(h.Get("Date")); err == nil {
		now = date
	}
	return max(at.Sub(now), 0), true
}

func malformed(field string, i int, what string) error {
	return fmt.Errorf("sluicehttp: %w: %s member %d: %s", ErrMalformed, field, i, what)
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// secondsDuration is the duration of a run of digits read as seconds,
// the longest time.Duration when it holds more.
func secondsDuration(digits string) time.Duration {
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return math.MaxInt64
	}
	return secondsOf(n)
}

// secondsOf is n ≥ 0 seconds, the longest time.Duration when it holds
// more.
func secondsOf(n int64) time.Duration {
	if n > math.MaxInt64/int64(time.Second) {
		return math.MaxInt64
	}
	return time.Duration(n) * time.Second
}

// The Structured Fields (RFC 9651) this file reads: lists of items with
// parameters. Every bare item type is read, so that a parameter of a type
// these fields do not use is skipped rather than refused; inner lists are
// read and refused, since both fields' members are items.

type sfKind uint8

const (
	sfInteger sfKind = iota + 1
	sfDecimal
	sfStr
	sfToken
	sfBytes
	sfBoolean
	sfDate
	sfDisplay
)

type sfBare struct {
	kind sfKind
	i    int64  // Integer, Date, Boolean (0 or 1)
	s    string // String, Token, Display String, Decimal's text
	b    []byte // Byte Sequence
}

// member is a list member whose item is a String or a Token: a policy's
// name and its parameters, the last of each key winning.
type member struct {
	name   string
	params map[string]sfBare
}

// integer sets *d to the Integer parameter key as seconds; it reports
// false when the parameter is there but not an Integer of at least min.
func (m member) integer(key string, d *time.Duration, min int64) bool {
	v, ok := m.params[key]
	if !ok {
		return true
	}
	if v.kind != sfInteger || v.i < min {
		return false
	}
	*d = secondsOf(v.i)
	return true
}

func (m member) str(key string, s *string) bool {
	v, ok := m.params[key]
	if ok && v.kind != sfStr {
		return false
	}
	*s = v.s
	return true
}

func (m member) bytes(key string, b *[]byte) bool {
	v, ok := m.params[key]
	if ok && v.kind != sfBytes {
		return false
	}
	*b = v.b
	return true
}

// flag reports whether the parameter key is Boolean true.
func (m member) flag(key string) bool {
	v, ok := m.params[key]
	return ok && v.kind == sfBoolean && v.i == 1
}

// parseFieldList parses the named fields of h as one Structured Fields
// list of named items.
func parseFieldList(h http.Header, name string) ([]member, error) {
	lines := h.Values(name)
	if len(lines) == 0 {
		return nil, nil
	}
	p := sfParser{s: strings.Join(lines, ",")}
	members, err := p.list()
	if err != nil {
		return nil, fmt.Errorf("sluicehttp: %w: %s: %v", ErrMalformed, name, err)
	}
	return members, nil
}

type sfParser struct {
	s string
	i int
}

var errSF = errors.New("not a Structured Fields list")

func (p *sfParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *sfParser) skip(chars string) {
	for p.i < len(p.s) && strings.IndexByte(chars, p.s[p.i]) >= 0 {
		p.i++
	}
}

// list parses RFC 9651's sf-list (section 4.2.1) of named items.
func (p *sfParser) list() ([]member, error) {
	var out []member
	p.skip(" \t")
	for p.i < len(p.s) {
		m, err := p.member()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
		p.skip(" \t")
		if p.i == len(p.s) {
			return out, nil
		}
		if p.peek() != ',' {
			return nil, fmt.Errorf("%w: expected ',' at byte %d", errSF, p.i)
		}
		p.i++
		p.skip(" \t")
		if p.i == len(p.s) {
			return nil, fmt.Errorf("%w: trailing ','", errSF)
		}
	}
	return out, nil
}

func (p *sfParser) member() (member, error) {
	if p.peek() == '(' {
		return member{}, fmt.Errorf("%w: member at byte %d is an inner list, not a policy", errSF, p.i)
	}
	v, err := p.bare()
	if err != nil {
		return member{}, err
	}
	if v.kind != sfStr && v.kind != sfToken {
		return member{}, fmt.Errorf("%w: a policy's name must be a String or a Token", errSF)
	}
	m := member{name: v.s}
	m.params, err = p.parameters()
	return m, err
}

// parameters parses RFC 9651's parameters (section 4.2.3.2).
func (p *sfParser) parameters() (map[string]sfBare, error) {
	params := map[string]sfBare{}
	for p.peek() == ';' {
		p.i++
		p.skip(" ")
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		v := sfBare{kind: sfBoolean, i: 1}
		if p.peek() == '=' {
			p.i++
			if v, err = p.bare(); err != nil {
				return nil, err
			}
		}
		params[key] = v
	}
	return params, nil
}

func (p *sfParser) key() (string, error) {
	start := p.i
	if c := p.peek(); !(c >= 'a' && c <= 'z' || c == '*') {
		return "", fmt.Errorf("%w: a parameter's key at byte %d must start with a lowercase letter or '*'", errSF, p.i)
	}
	for p.i < len(p.s) {
		c := p.s[p.i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '*') {
			break
		}
		p.i++
	}
	return p.s[start:p.i], nil
}

// bare parses RFC 9651's bare-item (section 4.2.3.1).
func (p *sfParser) bare() (sfBare, error) {
	switch c := p.peek(); {
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == '"':
		s, err := p.str()
		return sfBare{kind: sfStr, s: s}, err
	case c == '*' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		return sfBare{kind: sfToken, s: p.token()}, nil
	case c == ':':
		return p.byteSeq()
	case c == '?':
		if p.i+1 < len(p.s) && (p.s[p.i+1] == '0' || p.s[p.i+1] == '1') {
			p.i += 2
			return sfBare{kind: sfBoolean, i: int64(p.s[p.i-1] - '0')}, nil
		}
		return sfBare{}, fmt.Errorf("%w: bad Boolean at byte %d", errSF, p.i)
	case c == '@':
		p.i++
		v, err := p.number()
		if err != nil || v.kind != sfInteger {
			return sfBare{}, fmt.Errorf("%w: bad Date at byte %d", errSF, p.i)
		}
		return sfBare{kind: sfDate, i: v.i}, nil
	case c == '%':
		return p.display()
	}
	return sfBare{}, fmt.Errorf("%w: no item at byte %d", errSF, p.i)
}

// number parses an Integer (at most 15 digits) or a Decimal (at most 12
// digits, '.', 1 to 3 digits).
func (p *sfParser) number() (sfBare, error) {
	start := p.i
	if p.peek() == '-' {
		p.i++
	}
	digits, dot := 0, -1
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && dot < 0 && digits > 0:
			if digits > 12 {
				return sfBare{}, fmt.Errorf("%w: Decimal too long at byte %d", errSF, start)
			}
			dot = digits
		default:
			return p.endNumber(start, digits, dot)
		}
		p.i++
		if dot < 0 && digits > 15 || dot >= 0 && digits-dot > 3 {
			return sfBare{}, fmt.Errorf("%w: number too long at byte %d", errSF, start)
		}
	}
	return p.endNumber(start, digits, dot)
}

func (p *sfParser) endNumber(start, digits, dot int) (sfBare, error) {
	text := p.s[start:p.i]
	switch {
	case digits == 0 || dot == digits:
		return sfBare{}, fmt.Errorf("%w: bad number at byte %d", errSF, start)
	case dot >= 0:
		return sfBare{kind: sfDecimal, s: text}, nil
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return sfBare{}, fmt.Errorf("%w: bad Integer at byte %d", errSF, start)
	}
	return sfBare{kind: sfInteger, i: n}, nil
}

func (p *sfParser) str() (string, error) {
	start := p.i
	p.i++ // '"'
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			if p.i == len(p.s) || p.s[p.i] != '"' && p.s[p.i] != '\\' {
				return "", fmt.Errorf("%w: bad escape in the String at byte %d", errSF, start)
			}
			b.WriteByte(p.s[p.i])
			p.i++
		case c == '"':
			return b.String(), nil
		case c < 0x20 || c > 0x7e:
			return "", fmt.Errorf("%w: a String holds only printable ASCII (byte %d)", errSF, p.i-1)
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("%w: unterminated String at byte %d", errSF, start)
}

func (p *sfParser) token() string {
	start := p.i
	p.i++
	for p.i < len(p.s) && (isToken(p.s[p.i:p.i+1]) || p.s[p.i] == ':' || p.s[p.i] == '/') {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *sfParser) byteSeq() (sfBare, error) {
	start := p.i
	end := strings.IndexByte(p.s[p.i+1:], ':')
	if end < 0 {
		return sfBare{}, fmt.Errorf("%w: unterminated Byte Sequence at byte %d", errSF, start)
	}
	b64 := p.s[p.i+1 : p.i+1+end]
	p.i += end + 2
	for i := 0; i < len(b64); i++ {
		if c := b64[i]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
			return sfBare{}, fmt.Errorf("%w: bad Byte Sequence at byte %d", errSF, start)
		}
	}
	b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(b64, "="))
	if err != nil {
		return sfBare{}, fmt.Errorf("%w: bad Byte Sequence at byte %d", errSF, start)
	}
	return sfBare{kind: sfBytes, b: b}, nil
}

// display parses a Display String (%"…" with %xx escapes of UTF-8).
func (p *sfParser) display() (sfBare, error) {
	start := p.i
	if p.i+1 >= len(p.s) || p.s[p.i+1] != '"' {
		return sfBare{}, fmt.Errorf("%w: bad Display String at byte %d", errSF, start)
	}
	p.i += 2
	var b []byte
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '%':
			if p.i+2 > len(p.s) {
				return sfBare{}, fmt.Errorf("%w: bad Display String at byte %d", errSF, start)
			}
			n, err := strconv.ParseUint(p.s[p.i:p.i+2], 16, 8)
			if err != nil || strings.ToLower(p.s[p.i:p.i+2]) != p.s[p.i:p.i+2] {
				return sfBare{}, fmt.Errorf("%w: bad Display String at byte %d", errSF, start)
			}
			b = append(b, byte(n))
			p.i += 2
		case c == '"':
			if !utf8.Valid(b) {
				return sfBare{}, fmt.Errorf("%w: Display String at byte %d is not UTF-8", errSF, start)
			}
			return sfBare{kind: sfDisplay, s: string(b)}, nil
		case c < 0x20 || c > 0x7e:
			return sfBare{}, fmt.Errorf("%w: bad Display String at byte %d", errSF, start)
		default:
			b = append(b, c)
		}
	}
	return sfBare{}, fmt.Errorf("%w: unterminated Display String at byte %d", errSF, start)
}

// quoteSF writes s as a Structured Fields String: quoted, with '"' and
// '\' escaped. A byte outside printable ASCII, which a String cannot hold,
// is written as '?'.
func quoteSF(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			b.WriteByte('?')
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
