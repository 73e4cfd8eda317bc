package phase_test

import (
	"fmt"

	"github.com/purelifecycle/machine/phase"
)

func ExampleParse() {
	p, err := phase.Parse("CrashLoopBackOff")
	fmt.Println(p, err)
	_, err = phase.Parse("crashloopbackoff")
	fmt.Println(err)
	// Output:
	// CrashLoopBackOff <nil>
	// phase: unknown phase "crashloopbackoff"
}

func ExampleAllowed() {
	fmt.Println(phase.Allowed(phase.Pending, phase.Running))
	fmt.Println(phase.Allowed(phase.Running, phase.Failed))
	fmt.Println(phase.Why(phase.Unknown, phase.Failed))
	// Output:
	// true
	// false
	// health timeout with the fleet limiter's grant (H9, T4)
}

func ExampleEdges() {
	for _, e := range phase.Edges() {
		if e.From == phase.Running {
			fmt.Printf("%s -> %s: %s\n", e.From.Label(), e.To.Label(), e.Why)
		}
	}
	// Output:
	// Running -> Terminating: deletion begins (X3)
	// Running -> Unknown: node unhealthy or missing (H1, H4)
	// Running -> InPlaceUpdating: node drained for MCM's in-place update (I2)
}
