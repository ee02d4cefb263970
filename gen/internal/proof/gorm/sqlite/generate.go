// Package gormsqlite holds the gorm models sluicegen emits for sqlite, kept here
// so that the build proves they compile; the tests in ../../orm prove they
// match the generated DDL and round-trip rows. go generate refreshes them.
package gormsqlite

//go:generate go run github.com/sluice-go/sluice/gen/cmd/sluicegen -target gorm -dialect sqlite -package gormsqlite -out .
