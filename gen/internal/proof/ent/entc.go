//go:build ignore

// entc.go runs ent's code generation on ./schema, as `ent generate` would.
package main

import (
	"log"

	"entgo.io/ent/entc"
	"entgo.io/ent/entc/gen"
)

func main() {
	if err := entc.Generate("./schema", &gen.Config{
		Target:  ".",
		Package: "github.com/sluice-go/sluice/gen/internal/proof/ent",
	}); err != nil {
		log.Fatal(err)
	}
}
