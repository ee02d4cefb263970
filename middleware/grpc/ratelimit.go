package sluicegrpc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/textproto"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The metadata keys the rate-limit interceptors send, the gRPC spelling of
// sluicehttp.RateLimit's headers: with every limited call (as header
// metadata, which a denial carries too) the rule's maximum, what its
// window has left and the seconds until it ends, rounded up; with a
// denial also the seconds to wait, rounded up and at least 1. These are
// the keys of the default style ([Config].Headers); MetadataPolicy and
// MetadataRateLimit those of sluicehttp.HeadersIETF, which carry the
// draft's fields as they are written in HTTP, one member per rule.
const (
	MetadataLimit      = "ratelimit-limit"
	MetadataRemaining  = "ratelimit-remaining"
	MetadataReset      = "ratelimit-reset"
	MetadataRetryAfter = "retry-after"
	MetadataPolicy     = "ratelimit-policy"
	MetadataRateLimit  = "ratelimit"
)

// MetadataViolatedPolicies is the key, in a denial's errdetails.ErrorInfo
// Metadata, of the names of the rules that denied, comma-separated: the
// violated-policies of sluicehttp.Problem.
const MetadataViolatedPolicies = "violated-policies"

// ErrorDomain is the Domain of the errdetails.ErrorInfo that every denial
// and failure of this package carries; its Reason is a stable code:
// sluicehttp.CodeRateLimited, sluicehttp.CodeUnavailable,
// sluicehttp.CodeKeyFailed, sluicehttp.CodeMissingKey,
// sluicehttp.CodeContention, sluicehttp.CodeInternal, or an apikey code.
const ErrorDomain = "sluice"

// Config configures [UnaryRateLimit] and [StreamRateLimit].
//
// A call's rule (or policy) is Methods[fullMethod] or
// Policies[fullMethod] (such as "/pkg.Service/Method"), else the Methods or
// Policies pattern ending in '*' with the longest prefix of the full
// method ("/pkg.Service/*" for a whole service, "*" for every call), else
// Default. Any of them may be ratelimit.Unlimited, which lets the call
// through untouched. A stream is counted once, when it opens.
type Config struct {
	// Limiter decides the calls. Required.
	Limiter *ratelimit.Limiter
	// Default applies to methods Methods does not name. Required: set it
	// to ratelimit.Unlimited to limit only the methods named.
	Default ratelimit.Rule
	// Methods maps full method names, and prefixes ending in '*', to
	// rules.
	Methods map[string]ratelimit.Rule
	// Policies maps full method names, and prefixes ending in '*', as
	// Methods does, to policies: several named rules on one key, decided
	// together by ratelimit.Limiter.ConsumePolicy. A method is in Methods
	// or in Policies, not both.
	Policies map[string]ratelimit.Policy

	// Key, when set, names the bucket a call is counted in instead of its
	// client address and method: a user id, an API key, a tenant. Calls
	// with equal keys under the same rule share one budget whatever their
	// method (the rule is part of the stored key). Any string will do: the
	// interceptor stores ratelimit.SafeKey of it. An error, or an empty
	// key, is never a bypass: the call fails with codes.Internal and
	// OnError is told. Key is not called for Unlimited or skipped calls.
	Key func(ctx context.Context, fullMethod string) (string, error)
	// TrustedProxies are the peers whose x-forwarded-for metadata (or
	// ClientIPHeader) is believed, read as sluicehttp.ClientKey reads the
	// headers of the same names.
	TrustedProxies []netip.Prefix
	// ClientIPHeader, when set, names the metadata key a trusted proxy
	// writes the client's address in, such as "x-real-ip", instead of
	// x-forwarded-for. TrustedProxies must be set.
	ClientIPHeader string
	// IPv4Prefix and IPv6Prefix group clients by this many leading bits;
	// 0 means 32 and 64, as in sluicehttp.RateLimitConfig.
	IPv4Prefix, IPv6Prefix int
	// Skip, when set, lets the calls it reports true for through
	// unlimited. It must not believe what a client can write unless
	// something the client cannot forge stands behind it.
	Skip func(ctx context.Context, fullMethod string) bool
	// OnError, when set, receives the limiter's errors and Key's. A
	// limiter failing closed answers codes.Unavailable; failing open, the
	// call goes through; when the call's own context is done, it answers
	// codes.Canceled or codes.DeadlineExceeded and the handler never runs.
	OnError func(ctx context.Context, fullMethod string, err error)
	// NoMetadata, when true, sends none of the Metadata* keys; a denial
	// still carries its errdetails.RetryInfo.
	NoMetadata bool
	// Headers chooses the metadata as sluicehttp.RateLimitConfig.Headers
	// chooses the headers, written by sluicehttp.HeaderStyle.SetHeaders
	// with the names lowercased: sluicehttp.HeadersDefault (the zero
	// value) ratelimit-limit, ratelimit-remaining, ratelimit-reset and
	// retry-after; sluicehttp.HeadersIETF ratelimit-policy and ratelimit
	// (one member per rule, a shadow rule's marked sluice-shadow) and
	// retry-after; sluicehttp.HeadersLegacy x-ratelimit-*; HeadersNone
	// none. Under HeadersIETF every rule's window must be whole seconds.
	Headers sluicehttp.HeaderStyle
}

// choice is what a call is decided by: a lone rule, or a policy.
type choice struct {
	rule   ratelimit.Rule
	policy ratelimit.Policy // nil: rule alone
}

// String names the choice in a stored key: the rule, or the policy's
// rules with their names (which hold no ',' or '=').
func (c choice) String() string {
	if c.policy == nil {
		return c.rule.String()
	}
	parts := make([]string, len(c.policy))
	for i, r := range c.policy {
		parts[i] = r.Name + "=" + r.String()
	}
	return strings.Join(parts, ",")
}

type prefixRule struct {
	prefix string
	choice choice
}

// limiter is a checked Config.
type limiter struct {
	cfg      Config
	client   sluicehttp.RateLimitConfig // for ClientKey: the client fields of cfg
	exact    map[string]choice
	prefixes []prefixRule // longest first
}

// UnaryRateLimit returns a unary server interceptor that limits calls as
// cfg says. A denied call fails with codes.ResourceExhausted, an
// errdetails.RetryInfo whose RetryDelay is how long to wait, an
// errdetails.ErrorInfo (Reason sluicehttp.CodeRateLimited, Domain
// [ErrorDomain]) and the Metadata* header metadata; the handler does not
// run. An admitted call carries MetadataLimit, MetadataRemaining and
// MetadataReset in its header metadata.
//
// The default key is the client's address, grouped as
// sluicehttp.ClientKey groups it (IPv4 alone, IPv6 by its /64, IPv4-mapped
// IPv6 as IPv4; sluicehttp.UnknownClient for a peer without an IP address,
// such as a Unix socket or bufconn, all of which then share one bucket
// per method), then "|" and the full method.
//
// A bad configuration is an error wrapping core.ErrInvalid.
func UnaryRateLimit(cfg Config) (grpc.UnaryServerInterceptor, error) {
	l, err := newLimiter(cfg)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		md, err := l.decide(ctx, info.FullMethod)
		if md != nil {
			_ = grpc.SetHeader(ctx, md)
		}
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}, nil
}

// StreamRateLimit returns a stream server interceptor that limits the
// opening of streams as cfg says, answering as [UnaryRateLimit] does. Each
// stream counts once, whatever number of messages it carries.
func StreamRateLimit(cfg Config) (grpc.StreamServerInterceptor, error) {
	l, err := newLimiter(cfg)
	if err != nil {
		return nil, err
	}
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		md, err := l.decide(ss.Context(), info.FullMethod)
		if md != nil {
			_ = ss.SetHeader(md)
		}
		if err != nil {
			return err
		}
		return handler(srv, ss)
	}, nil
}

func newLimiter(cfg Config) (*limiter, error) {
	// sluicehttp.RateLimit checks the limiter, the default rule (against
	// the limiter's longest window too) and the client fields as the HTTP
	// middleware has them; its answer is discarded.
	client := sluicehttp.RateLimitConfig{Limiter: cfg.Limiter, Default: cfg.Default, TrustedProxies: cfg.TrustedProxies,
		ClientIPHeader: cfg.ClientIPHeader, IPv4Prefix: cfg.IPv4Prefix, IPv6Prefix: cfg.IPv6Prefix, Headers: cfg.Headers}
	if _, err := sluicehttp.RateLimit(client); err != nil {
		return nil, fmt.Errorf("sluicegrpc: Config (checked as sluicehttp.RateLimitConfig): %w", err)
	}
	l := &limiter{cfg: cfg, client: client, exact: map[string]choice{}}
	for m, rule := range cfg.Methods {
		if err := cfg.Limiter.CheckRule(rule); err != nil {
			return nil, fmt.Errorf("sluicegrpc: Config.Methods[%q]: %w", m, err)
		}
		if err := cfg.Headers.CheckRule(rule); err != nil {
			return nil, fmt.Errorf("sluicegrpc: Config.Methods[%q]: %w", m, err)
		}
		if err := l.place("Methods", m, choice{rule: rule}); err != nil {
			return nil, err
		}
	}
	for m, p := range cfg.Policies {
		if _, dup := cfg.Methods[m]; dup {
			return nil, fmt.Errorf("sluicegrpc: %w: Config.Policies[%q]: the method is in Methods too: give it a rule or a policy", core.ErrInvalid, m)
		}
		if err := l.checkPolicy(m, p); err != nil {
			return nil, err
		}
		if err := l.place("Policies", m, choice{policy: slices.Clone(p)}); err != nil {
			return nil, err
		}
	}
	sort.Slice(l.prefixes, func(i, j int) bool { return len(l.prefixes[i].prefix) > len(l.prefixes[j].prefix) })
	return l, nil
}

// checkPolicy checks Policies[m] as ConsumePolicy and the header style
// would.
func (l *limiter) checkPolicy(m string, p ratelimit.Policy) error {
	if err := l.cfg.Limiter.CheckPolicyRules(p); err != nil {
		return fmt.Errorf("sluicegrpc: Config.Policies[%q]: %w", m, err)
	}
	for i, r := range p {
		if err := l.cfg.Headers.CheckRule(r); err != nil {
			return fmt.Errorf("sluicegrpc: Config.Policies[%q][%d]: %w", m, i, err)
		}
	}
	return nil
}

// place files c under the method or prefix m of the field named.
func (l *limiter) place(field, m string, c choice) error {
	switch i := strings.IndexByte(m, '*'); {
	case i < 0 && strings.HasPrefix(m, "/"):
		l.exact[m] = c
	case i == len(m)-1:
		l.prefixes = append(l.prefixes, prefixRule{prefix: m[:i], choice: c})
	default:
		return fmt.Errorf("sluicegrpc: %w: Config.%s[%q]: a key is a full method (\"/pkg.Service/Method\") or a prefix ending in '*'",
			core.ErrInvalid, field, m)
	}
	return nil
}

func (l *limiter) choiceFor(method string) choice {
	if c, ok := l.exact[method]; ok {
		return c
	}
	for _, p := range l.prefixes {
		if strings.HasPrefix(method, p.prefix) {
			return p.choice
		}
	}
	return choice{rule: l.cfg.Default}
}

// decide counts the call and returns the header metadata to send and the
// error to answer with (nil: run the handler).
func (l *limiter) decide(ctx context.Context, method string) (metadata.MD, error) {
	c := l.choiceFor(method)
	if c.policy == nil && c.rule == ratelimit.Unlimited || (l.cfg.Skip != nil && l.cfg.Skip(ctx, method)) {
		return nil, nil
	}
	key, err := l.key(ctx, method, c)
	if err != nil {
		l.report(ctx, method, err)
		return nil, failure(codes.Internal, sluicehttp.CodeKeyFailed, "The request could not be identified for rate limiting.")
	}
	d, err := l.consume(ctx, key, c)
	if err != nil {
		l.report(ctx, method, err)
		switch {
		case ctx.Err() != nil:
			return nil, status.FromContextError(ctx.Err()).Err()
		case d.Allowed: // the limiter fails open
			return nil, nil
		}
		return nil, failure(codes.Unavailable, sluicehttp.CodeUnavailable, "The rate limiter is unavailable. Please try again later.")
	}
	var md metadata.MD
	if !l.cfg.NoMetadata {
		md = l.metadata(c.rule, d)
	}
	if d.Allowed {
		return md, nil
	}
	return md, denial(codes.ResourceExhausted, sluicehttp.CodeRateLimited, "Too many requests. Please try again later.", d.RetryAfter,
		sluicehttp.ViolatedPolicies(c.rule, d))
}

// consume decides the call under c.
func (l *limiter) consume(ctx context.Context, key string, c choice) (ratelimit.Decision, error) {
	if c.policy != nil {
		return l.cfg.Limiter.ConsumePolicy(ctx, key, c.policy, 1)
	}
	return l.cfg.Limiter.Consume(ctx, key, c.rule)
}

// metadata is what sluicehttp's middleware would write in the headers of
// the decision d under rule, as metadata: the same values, the names
// lowercased, without X-Retry-After (retry-after says it); nil for none.
func (l *limiter) metadata(rule ratelimit.Rule, d ratelimit.Decision) metadata.MD {
	h := http.Header{}
	l.cfg.Headers.SetHeaders(h, rule, d, l.cfg.Limiter.Now())
	h.Del("X-Retry-After")
	if len(h) == 0 {
		return nil
	}
	md := make(metadata.MD, len(h))
	for k, v := range h {
		md[strings.ToLower(k)] = v
	}
	return md
}

func (l *limiter) key(ctx context.Context, method string, c choice) (string, error) {
	if l.cfg.Key == nil {
		return ratelimit.SafeKey(l.clientKey(ctx) + "|" + method), nil
	}
	k, err := l.cfg.Key(ctx, method)
	switch {
	case err != nil:
		return "", fmt.Errorf("sluicegrpc: Config.Key: %w", err)
	case k == "":
		return "", errors.New("sluicegrpc: Config.Key returned an empty key")
	}
	return ratelimit.SafeKey(k + "|" + c.String()), nil
}

// clientKey is ratelimit's client key of the call's peer, and of what a
// trusted proxy reports in the call's metadata.
func (l *limiter) clientKey(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return sluicehttp.UnknownClient
	}
	r := &http.Request{RemoteAddr: p.Addr.String()}
	if len(l.cfg.TrustedProxies) > 0 {
		md, _ := metadata.FromIncomingContext(ctx)
		name := l.cfg.ClientIPHeader
		if name == "" {
			name = "x-forwarded-for"
		}
		if vals := md.Get(name); len(vals) > 0 {
			r.Header = http.Header{textproto.CanonicalMIMEHeaderKey(name): vals}
		}
	}
	return l.client.ClientKey(r)
}

func (l *limiter) report(ctx context.Context, method string, err error) {
	if l.cfg.OnError != nil {
		l.cfg.OnError(ctx, method, err)
	}
}

// failure is a status with an errdetails.ErrorInfo naming code.
func failure(c codes.Code, code, msg string) error {
	st, err := status.New(c, msg).WithDetails(&errdetails.ErrorInfo{Reason: code, Domain: ErrorDomain})
	if err != nil {
		return status.Error(c, msg)
	}
	return st.Err()
}

// denial is failure with an errdetails.RetryInfo when wait is positive,
// and the names of the rules that denied, when given, in the ErrorInfo.
func denial(c codes.Code, code, msg string, wait time.Duration, violated []string) error {
	info := &errdetails.ErrorInfo{Reason: code, Domain: ErrorDomain}
	if len(violated) > 0 {
		info.Metadata = map[string]string{MetadataViolatedPolicies: strings.Join(violated, ",")}
	}
	details := []protoadapt.MessageV1{info}
	if wait > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(wait)})
	}
	st, err := status.New(c, msg).WithDetails(details...)
	if err != nil {
		return status.Error(c, msg)
	}
	return st.Err()
}

// seconds is d in whole seconds, rounded up; 0 for d ≤ 0.
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
