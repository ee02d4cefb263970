module github.com/sluice-go/sluice/gen

go 1.26.0

require (
	github.com/sluice-go/sluice/adapters/sql v0.0.0-00010101000000-000000000000
	github.com/sluice-go/sluice/core v0.0.0-00010101000000-000000000000
)

replace (
	github.com/sluice-go/sluice/adapters/sql => ../adapters/sql
	github.com/sluice-go/sluice/core => ../core
)
