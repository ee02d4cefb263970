module github.com/sluice-go/sluice/core

go 1.26
