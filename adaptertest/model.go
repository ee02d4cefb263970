package adaptertest

import "github.com/sluice-go/sluice/core"

// CounterModel is the suite's own model for the contract cases: several
// rows can share a name (the multi-row guard), and there is a field of every
// type, nullable or not. A harness creates it with the built-in models.
func CounterModel() core.Model {
	return core.Model{Name: "counter", Comment: "conformance-suite rows", Fields: []core.Field{
		{Name: "id", Type: core.TypeInt, Primary: true},
		{Name: "name", Type: core.TypeString, Size: 255, Index: true},
		{Name: "hits", Type: core.TypeInt, Default: int64(0)},
		{Name: "budget", Type: core.TypeInt, Nullable: true},
		{Name: "flag", Type: core.TypeBool, Default: false},
		{Name: "seenAt", Type: core.TypeTime, Nullable: true},
		{Name: "label", Type: core.TypeString, Nullable: true},
		{Name: "slot", Type: core.TypeString, Nullable: true, Unique: true, Size: 255},
	}}
}
