// Package adaptertest is sluice's conformance and race suite. Every adapter
// in the sluice repository runs it, and so can yours: implement a [Harness]
// that creates tables and returns your adapter, then call [Run] from a test.
package adaptertest
