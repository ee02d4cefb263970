package adaptertest

import "testing"

// runContract runs the table of IncrementOne contract cases.
func runContract(t *testing.T, newHarness HarnessMaker) {}
