package apikey

import (
	"cmp"
	"slices"

	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// required is what a verification asks of a key's permissions: every one
// of all, and at least one of any when any is not empty.
type required struct {
	all, any []keystore.Permission
}

// claim is the keystore.Request of a verification at now (epoch ms) that
// spends cost and the named limits spend and requires r (nil: nothing).
func (r *required) claim(now, cost int64, spend []keystore.LimitSpend) keystore.Request {
	req := keystore.Request{Now: now, Cost: cost, Limits: spend}
	if r != nil {
		req.RequireAll, req.RequireAny = r.all, r.any
	}
	return req
}

// none reports whether r asks for nothing.
func (r *required) none() bool { return r == nil || (len(r.all) == 0 && len(r.any) == 0) }

// flatten lists a resource → actions map as permissions, in a stable
// order, refusing empty names.
func flatten(what string, p map[string][]string) ([]keystore.Permission, error) {
	if len(p) == 0 {
		return nil, invalidf("%s: no permission given", what)
	}
	if err := checkPermissions(p); err != nil {
		return nil, invalidf("%s: %v", what, err)
	}
	var out []keystore.Permission
	for res, actions := range p {
		if len(actions) == 0 {
			return nil, invalidf("%s: resource %q lists no action", what, res)
		}
		for _, a := range actions {
			out = append(out, keystore.Permission{Resource: res, Action: a})
		}
	}
	slices.SortFunc(out, func(a, b keystore.Permission) int {
		return cmp.Or(cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Action, b.Action))
	})
	return slices.Compact(out), nil
}

// Permissions requires the key to hold every listed action (resource →
// actions). A key that lacks one is denied with CodeForbidden before
// anything is spent. Given with [AnyPermission], both must hold.
func Permissions(all map[string][]string) VerifyOption {
	ps, err := flatten("Permissions", all)
	ps = slices.Clip(ps) // an append never writes into the option's list
	return func(o *verifyOptions) {
		o.req.all, o.err = append(o.req.all, ps...), cmp.Or(o.err, err)
	}
}

// AnyPermission requires the key to hold at least one listed action
// (resource → actions). A key that holds none is denied with
// CodeForbidden before anything is spent.
func AnyPermission(any map[string][]string) VerifyOption {
	ps, err := flatten("AnyPermission", any)
	ps = slices.Clip(ps)
	return func(o *verifyOptions) {
		o.req.any, o.err = append(o.req.any, ps...), cmp.Or(o.err, err)
	}
}
