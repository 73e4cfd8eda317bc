// Command gendoc writes the documentation generated from the code (package
// doc) into the doc directory, or into the directory its argument names.
// Run it with `go generate ./doc`.
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
	files, err := doc.Files()
	if err != nil {
		log.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
