package apikey

import (
	"cmp"
	"encoding/json"
	"slices"
)

// Permission is one action on one resource, as a key's Permissions map
// lists them (resource → actions).
type Permission struct {
	Resource string
	Action   string
}

// required is what a verification asks of a key's permissions: every one
// of all, and at least one of any when any is not empty.
type required struct {
	all, any []Permission
}

// none reports whether r asks for nothing.
func (r *required) none() bool { return r == nil || (len(r.all) == 0 && len(r.any) == 0) }

// flatten lists a resource → actions map as permissions, in a stable
// order, refusing empty names.
func flatten(what string, p map[string][]string) ([]Permission, error) {
	if len(p) == 0 {
		return nil, invalidf("%s: no permission given", what)
	}
	if err := checkPermissions(p); err != nil {
		return nil, invalidf("%s: %v", what, err)
	}
	var out []Permission
	for res, actions := range p {
		if len(actions) == 0 {
			return nil, invalidf("%s: resource %q lists no action", what, res)
		}
		for _, a := range actions {
			out = append(out, Permission{res, a})
		}
	}
	slices.SortFunc(out, func(a, b Permission) int {
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

// permitted reports whether the stored permissions (JSON text of resource
// → actions, or nil) satisfy r. Malformed JSON holds no permission.
func permitted(stored *string, r *required) bool {
	if r.none() {
		return true
	}
	var held map[string][]string
	if stored != nil && *stored != "" {
		if json.Unmarshal([]byte(*stored), &held) != nil {
			held = nil
		}
	}
	has := func(p Permission) bool { return slices.Contains(held[p.Resource], p.Action) }
	for _, p := range r.all {
		if !has(p) {
			return false
		}
	}
	if len(r.any) == 0 {
		return true
	}
	return slices.ContainsFunc(r.any, has)
}
