// Command gendoc writes the documentation generated from the code (package
// doc) into the doc directory. Run it with `go generate ./doc`.
package main

import (
	"log"
	"os"
	"path/filepath"

	"github.com/purelifecycle/machine/doc"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	for name, content := range doc.Files() {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
