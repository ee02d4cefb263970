module github.com/sluice-go/sluice/adapters/redis/redistest

go 1.26.0

require (
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/redis/go-redis/v9 v9.23.0
	github.com/sluice-go/sluice/adapters/redis v0.0.0-00010101000000-000000000000
	github.com/sluice-go/sluice/adaptertest v0.0.0-00010101000000-000000000000
	github.com/sluice-go/sluice/core v0.0.0-00010101000000-000000000000
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace (
	github.com/sluice-go/sluice/adapters/redis => ..
	github.com/sluice-go/sluice/adaptertest => ../../../adaptertest
	github.com/sluice-go/sluice/core => ../../../core
)
