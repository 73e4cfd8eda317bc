package fleetsim_test

import (
	"fmt"

	"github.com/purelifecycle/machine/examples/fleetsim"
)

// Run a small fleet with the default faults and ask whether every promise
// held; Report renders the whole story.
func ExampleRun() {
	o := fleetsim.DefaultOptions()
	o.Machines = 300
	r, err := fleetsim.Run(o)
	if err != nil {
		panic(err)
	}
	fmt.Println("ok:", r.OK())
	fmt.Println("past deadline:", r.Summary.PastDeadline, "orphan VMs:", r.Summary.Orphans)
	// Output:
	// ok: true
	// past deadline: 0 orphan VMs: 0
}
