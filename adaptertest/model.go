package adaptertest

import (
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// CounterModel is the suite's own model for the contract cases: several
// rows can share a name (the multi-row guard), and there is a field of every
// type, nullable or not. A harness creates it with the built-in models.
func CounterModel() core.Model {
	return core.Model{Name: "counter", Comment: "conformance-suite rows", Fields: []driver.Field{
		{Name: "id", Type: driver.TypeInt, Primary: true},
		{Name: "name", Type: driver.TypeString, Size: 255, Index: true},
		{Name: "hits", Type: driver.TypeInt, Default: int64(0)},
		{Name: "budget", Type: driver.TypeInt, Nullable: true},
		{Name: "flag", Type: driver.TypeBool, Default: false},
		{Name: "seenAt", Type: driver.TypeTime, Nullable: true},
		{Name: "label", Type: driver.TypeString, Nullable: true},
		{Name: "slot", Type: driver.TypeString, Nullable: true, Unique: true, Size: 255},
	}}
}
