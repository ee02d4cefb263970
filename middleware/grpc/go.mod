module github.com/sluice-go/sluice/middleware/grpc

go 1.26.0

require (
	github.com/sluice-go/sluice/adaptertest v0.0.0-00010101000000-000000000000
	github.com/sluice-go/sluice/core v0.0.0-00010101000000-000000000000
	github.com/sluice-go/sluice/middleware/http v0.0.0-00010101000000-000000000000
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/stretchr/testify v1.12.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

require (
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)

replace (
	github.com/sluice-go/sluice/adaptertest => ../../adaptertest
	github.com/sluice-go/sluice/core => ../../core
	github.com/sluice-go/sluice/middleware/http => ../http
)
