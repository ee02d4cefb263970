// Package bunsqlite holds the bun models sluicegen emits for sqlite, kept here
// so that the build proves they compile; the tests in ../../orm prove they
// match the generated DDL and round-trip rows. go generate refreshes them.
package bunsqlite

//go:generate go run github.com/sluice-go/sluice/gen/cmd/sluicegen -target bun -dialect sqlite -package bunsqlite -out .
