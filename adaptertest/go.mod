module github.com/sluice-go/sluice/adaptertest

go 1.26

require github.com/sluice-go/sluice/core v0.0.0-00010101000000-000000000000

require (
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

replace github.com/sluice-go/sluice/core => ../core
