module github.com/sluice-go/sluice/middleware/http

go 1.26.0

require github.com/sluice-go/sluice/core v0.0.0-00010101000000-000000000000

replace github.com/sluice-go/sluice/core => ../../core
