module github.com/sluice-go/sluice/middleware/echo

go 1.26.0

require (
	github.com/labstack/echo/v4 v4.16.0
	github.com/sluice-go/sluice/adaptertest v0.0.0-00010101000000-000000000000
	github.com/sluice-go/sluice/core v0.0.0-00010101000000-000000000000
	github.com/sluice-go/sluice/middleware/http v0.0.0-00010101000000-000000000000
)

require (
	github.com/stretchr/testify v1.12.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

require (
	github.com/labstack/gommon v0.5.0 // indirect
	github.com/mattn/go-colorable v0.1.15 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fasttemplate v1.2.2 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)

replace (
	github.com/sluice-go/sluice/adaptertest => ../../adaptertest
	github.com/sluice-go/sluice/core => ../../core
	github.com/sluice-go/sluice/middleware/http => ../http
)
