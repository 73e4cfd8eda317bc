package mcmworld

import (
	"os"
	"path/filepath"
	"testing"
)

// The CRDs are found from the binary alone, without the go command, and
// hold MCM's four resources.
func TestCRDDirFromTheLinkedSource(t *testing.T) {
	dir := fromLinkedSource()
	if dir == "" {
		t.Fatal("no MCM directory from the linked source")
	}
	t.Setenv("MCM_DIR", "")
	crds, err := CRDDir()
	if err != nil {
		t.Fatal(err)
	}
	if crds != filepath.Join(dir, "kubernetes", "crds") {
		t.Errorf("CRDDir %s, linked source %s", crds, dir)
	}
	for _, r := range []string{"machines", "machinesets", "machinedeployments", "machineclasses"} {
		if _, err := os.Stat(filepath.Join(crds, "machine.sapcloud.io_"+r+".yaml")); err != nil {
			t.Error(err)
		}
	}
}
