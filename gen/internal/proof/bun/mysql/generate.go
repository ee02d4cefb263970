// Package bunmysql holds the bun models sluicegen emits for mysql, kept here
// so that the build proves they compile; the tests in ../../orm prove they
// match the generated DDL and round-trip rows. go generate refreshes them.
package bunmysql

//go:generate go run github.com/sluice-go/sluice/gen/cmd/sluicegen -target bun -dialect mysql -package bunmysql -out .
