//go:build ignore

// entc.go runs ent's code generation on ./ent/schema, as `ent generate`
// would, writing the client into ./ent.
package main

import (
	"log"

	"github.com/sluice-go/sluice/gen/proof/testenv"
)

func main() {
	if err := testenv.GenerateEnt("./ent/schema", "./ent", "example.com/sluiceproof/ent"); err != nil {
		log.Fatal(err)
	}
}
