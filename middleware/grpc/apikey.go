package sluicegrpc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// DefaultAPIKeyMetadata is the metadata key the API-key interceptors read
// the key from.
const DefaultAPIKeyMetadata = sluicehttp.DefaultHeader // "x-api-key"

// CodeMissing is the ErrorInfo reason of a call without a key,
// sluicehttp.CodeMissingKey; the other reasons are apikey's codes
// (apikey.CodeInvalid, …) and sluicehttp.CodeContention and
// sluicehttp.CodeInternal.
const CodeMissing = sluicehttp.CodeMissingKey

// APIKeyOption configures [UnaryAPIKey] and [StreamAPIKey].
type APIKeyOption func(*apiKeyConfig) error

type apiKeyConfig struct {
	md      string
	verify  []apikey.VerifyOption
	onError func(ctx context.Context, fullMethod string, err error)
}

// MetadataKey reads the key from the named metadata key instead of
// x-api-key. gRPC metadata keys are lower case; name is lowered.
func MetadataKey(name string) APIKeyOption {
	return func(c *apiKeyConfig) error {
		name = strings.ToLower(name)
		if name == "" || strings.HasPrefix(name, "grpc-") || strings.HasSuffix(name, "-bin") || strings.HasPrefix(name, ":") {
			return fmt.Errorf("sluicegrpc: %w: MetadataKey(%q): not a metadata key a client can send as text", core.ErrInvalid, name)
		}
		c.md = name
		return nil
	}
}

// Verify gives every call's verification the manager's own options, as
// apikey.Manager.Verify takes them: apikey.Cost (1 when absent; 0 checks
// only), apikey.Permissions and apikey.AnyPermission (a key without them
// fails with codes.PermissionDenied and spends nothing), apikey.LimitCost.
// They are checked when the interceptor is built; given more than once,
// the lists add up.
func Verify(opts ...apikey.VerifyOption) APIKeyOption {
	return func(c *apiKeyConfig) error {
		c.verify = append(c.verify, opts...)
		return nil
	}
}

// OnAPIKeyError passes the errors of verification (not its denials) to f
// before the interceptor answers.
func OnAPIKeyError(f func(ctx context.Context, fullMethod string, err error)) APIKeyOption {
	return func(c *apiKeyConfig) error {
		if f == nil {
			return fmt.Errorf("sluicegrpc: %w: OnAPIKeyError(nil)", core.ErrInvalid)
		}
		c.onError = f
		return nil
	}
}

type ctxKey struct{}

// KeyFromContext returns the key that [UnaryAPIKey] or [StreamAPIKey]
// verified for this call.
func KeyFromContext(ctx context.Context) (*apikey.Key, bool) {
	k, ok := ctx.Value(ctxKey{}).(*apikey.Key)
	return k, ok && k != nil
}

// UnaryAPIKey returns a unary server interceptor that verifies the API key
// in each call's metadata (x-api-key unless [MetadataKey] names another)
// with m, as sluicehttp.APIKey does, and runs the handler with the
// verified key in its context ([KeyFromContext]).
//
// A missing, invalid, disabled or expired key fails with
// codes.Unauthenticated; a key without a permission [Verify] requires with
// codes.PermissionDenied; a key over its rate limit or quota with
// codes.ResourceExhausted and, when it can be used again, an
// errdetails.RetryInfo and [MetadataRetryAfter]; a failed verification
// with codes.Unavailable (contention), codes.Internal, or the call's own
// codes.Canceled or codes.DeadlineExceeded. Each failure carries an
// errdetails.ErrorInfo whose Reason is the apikey code ([CodeMissing] for
// a missing key) and whose Domain is [ErrorDomain].
//
// A Manager not made by apikey.New or apikey.NewStorageOnly, or a bad
// option, is an error wrapping core.ErrInvalid.
func UnaryAPIKey(m *apikey.Manager, opts ...APIKeyOption) (grpc.UnaryServerInterceptor, error) {
	v, err := newVerifier(m, opts)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		k, md, err := v.verify(ctx, info.FullMethod)
		if md != nil {
			_ = grpc.SetHeader(ctx, md)
		}
		if err != nil {
			return nil, err
		}
		return handler(context.WithValue(ctx, ctxKey{}, k), req)
	}, nil
}

// StreamAPIKey returns a stream server interceptor that verifies the key
// when a stream opens, answering as [UnaryAPIKey] does; the handler's
// stream has the key in its context.
func StreamAPIKey(m *apikey.Manager, opts ...APIKeyOption) (grpc.StreamServerInterceptor, error) {
	v, err := newVerifier(m, opts)
	if err != nil {
		return nil, err
	}
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		k, md, err := v.verify(ss.Context(), info.FullMethod)
		if md != nil {
			_ = ss.SetHeader(md)
		}
		if err != nil {
			return err
		}
		return handler(srv, &keyStream{ServerStream: ss, ctx: context.WithValue(ss.Context(), ctxKey{}, k)})
	}, nil
}

// keyStream is a server stream whose context holds the verified key.
type keyStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *keyStream) Context() context.Context { return s.ctx }

type verifier struct {
	m   *apikey.Manager
	cfg apiKeyConfig
}

func newVerifier(m *apikey.Manager, opts []APIKeyOption) (*verifier, error) {
	// CheckVerify refuses a Manager not made by New or NewStorageOnly,
	// and says so.
	if err := m.CheckVerify(); err != nil {
		return nil, fmt.Errorf("sluicegrpc: %w", err)
	}
	cfg := apiKeyConfig{md: DefaultAPIKeyMetadata}
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("sluicegrpc: %w: API-key option %d of %d is nil", core.ErrInvalid, i+1, len(opts))
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	if err := m.CheckVerify(cfg.verify...); err != nil {
		return nil, fmt.Errorf("sluicegrpc: Verify: %w", err)
	}
	return &verifier{m: m, cfg: cfg}, nil
}

// verify returns the call's verified key, or the header metadata and the
// error to answer with.
func (v *verifier) verify(ctx context.Context, method string) (*apikey.Key, metadata.MD, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(v.cfg.md)
	if len(vals) == 0 || vals[0] == "" {
		return nil, nil, failure(codes.Unauthenticated, CodeMissing, "missing API key in metadata "+v.cfg.md)
	}
	res, err := v.m.Verify(ctx, vals[0], v.cfg.verify...)
	if err != nil {
		if v.cfg.onError != nil {
			v.cfg.onError(ctx, method, err)
		}
		switch {
		case ctx.Err() != nil:
			return nil, nil, status.FromContextError(ctx.Err()).Err()
		case errors.Is(err, core.ErrContention):
			return nil, nil, failure(codes.Unavailable, sluicehttp.CodeContention, "the key is too busy; try again")
		}
		return nil, nil, failure(codes.Internal, sluicehttp.CodeInternal, "API key verification failed")
	}
	if res.Valid {
		return res.Key, nil, nil
	}
	if res.Status != http.StatusTooManyRequests {
		code := codes.Unauthenticated
		if res.Code == apikey.CodeForbidden {
			code = codes.PermissionDenied
		}
		return nil, nil, failure(code, string(res.Code), res.Code.Message())
	}
	var out metadata.MD
	if res.TryAgainIn > 0 {
		out = metadata.Pairs(MetadataRetryAfter, itoa(max(seconds(res.TryAgainIn), 1)))
	}
	return nil, out, denial(codes.ResourceExhausted, string(res.Code), res.Code.Message(), res.TryAgainIn, nil)
}
