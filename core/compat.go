package core

import "github.com/sluice-go/sluice/core/driver"

// Adapter, SecondaryStorage and Counter are the names a harness or a
// secondary storage written before the adapter contract moved to package
// driver refers to; they remain so that such code keeps compiling.
//
// Deprecated: use [driver.Adapter], [driver.SecondaryStorage] and
// [driver.Counter].
type (
	Adapter          = driver.Adapter
	SecondaryStorage = driver.SecondaryStorage
	Counter          = driver.Counter
)
