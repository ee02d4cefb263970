// Package ent is the ent client that ent's own code generation writes for
// the schema sluicegen emits (in ./schema). It exists to prove that ent
// accepts the generated schema and that the client builds and works on
// the generated DDL; `go generate` refreshes both, and the tests fail when
// either is stale.
package ent

//go:generate go run github.com/sluice-go/sluice/gen/cmd/sluicegen -target ent -out schema -package schema
//go:generate go run entc.go
