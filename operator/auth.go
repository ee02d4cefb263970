package operator

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// An Authorizer decides whether r may use the API and names who sends it:
// the actor that the key events of its changes carry. An error refuses
// the request with 401, or 403 when it wraps [ErrForbidden]; it runs
// before the body is read.
type Authorizer func(r *http.Request) (actor string, err error)

// ErrForbidden, wrapped by an Authorizer's error, answers 403 instead of
// 401: the caller is known but may not do this.
var ErrForbidden = errors.New("operator: forbidden")

// errUnauthorized is BearerToken's refusal.
var errUnauthorized = errors.New("operator: a valid operator token is required (Authorization: Bearer <token>)")

// BearerToken returns an Authorizer that admits requests carrying
// "Authorization: Bearer <token>" and names them actor. The comparison
// takes the same time whatever the token sent, so timing tells nothing
// of the token (both sides are hashed first, so not even its length).
// An empty token admits nobody.
func BearerToken(actor, token string) Authorizer {
	want := sha256.Sum256([]byte(token))
	return func(r *http.Request) (string, error) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		sum := sha256.Sum256([]byte(got))
		if subtle.ConstantTimeCompare(sum[:], want[:]) != 1 || !ok || token == "" {
			return "", errUnauthorized
		}
		return actor, nil
	}
}

type actorKey struct{}

// ActorFrom returns the actor the Authorizer named for the request whose
// context ctx is, or derives from: an observer of the manager
// ([apikey.WithObserver]) calls it to learn who made a change.
func ActorFrom(ctx context.Context) (string, bool) {
	a, ok := ctx.Value(actorKey{}).(string)
	return a, ok
}

// WithActor returns ctx naming actor, as the handler does for each
// request it admits: for changes made through the Manager elsewhere (the
// sluice command, a job) that should be attributed too.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// sameOrigin refuses a change sent from another site: a browser names the
// page's origin (Origin) and how it relates to the target
// (Sec-Fetch-Site) on every request that can change something, and a
// forged form or fetch from elsewhere cannot hide either. A request with
// neither header comes from no browser (curl, the sluice command), and
// has only its credentials to pass.
func sameOrigin(r *http.Request) error {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return &problem{status: http.StatusForbidden, detail: "a change must come from the console's own origin (Sec-Fetch-Site: " + r.Header.Get("Sec-Fetch-Site") + ")"}
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host != r.Host {
		return &problem{status: http.StatusForbidden, detail: "a change must come from the console's own origin, not " + origin}
	}
	return nil
}
