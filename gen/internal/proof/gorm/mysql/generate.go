// Package gormmysql holds the gorm models sluicegen emits for mysql, kept here
// so that the build proves they compile; the tests in ../../orm prove they
// match the generated DDL and round-trip rows. go generate refreshes them.
package gormmysql

//go:generate go run github.com/sluice-go/sluice/gen/cmd/sluicegen -target gorm -dialect mysql -package gormmysql -out .
