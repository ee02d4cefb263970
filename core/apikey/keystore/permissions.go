package keystore

import (
	"encoding/json"
	"slices"
)

// Permission is one action on one resource, as a key's permissions list
// them (resource → actions).
type Permission struct {
	Resource string
	Action   string
}

// permitted reports whether the stored permissions (JSON text of resource
// → actions, or nil) hold every one of all and, any not being empty, one
// of any (rule 3 of Apply). Malformed JSON holds no permission.
func permitted(stored *string, all, any []Permission) bool {
	if len(all) == 0 && len(any) == 0 {
		return true
	}
	var held map[string][]string
	if stored != nil && *stored != "" {
		if json.Unmarshal([]byte(*stored), &held) != nil {
			held = nil
		}
	}
	has := func(p Permission) bool { return slices.Contains(held[p.Resource], p.Action) }
	for _, p := range all {
		if !has(p) {
			return false
		}
	}
	if len(any) == 0 {
		return true
	}
	return slices.ContainsFunc(any, has)
}
