package lastop_test

import (
	"fmt"
	"time"

	"github.com/purelifecycle/machine/lastop"
)

func ExampleOperation_Describe() {
	op := lastop.Operation{
		Type:   lastop.TypeDelete,
		State:  lastop.StateFailed,
		Desc:   lastop.DescVMDeletionRetry,
		Detail: "machine codes error: code = [Unavailable] message = [throttled]",
	}
	fmt.Println(op.Describe(lastop.Args{Machine: "worker-a"}))
	fmt.Println(op.Desc.Step())

	joined := lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateSuccessful, Desc: lastop.DescJoined, Elapsed: 3*time.Minute + 12*time.Second}
	fmt.Println(joined.Describe(lastop.Args{Machine: "worker-a"}))
	// Output:
	// VM deletion failed due to - machine codes error: code = [Unavailable] message = [throttled]. However, will re-try in the next resync. Initiate VM deletion
	// delete-vm
	// Machine worker-a successfully joined the cluster in 3m12s
}

func ExampleParse() {
	p := lastop.Parse(`Retrieval of Node Object "ip-10-0-0-1" failed due to error: etcdserver: leader changed, Retrying. Initiate node object deletion`)
	fmt.Println(p.Desc, p.Step, p.Args.Node)
	fmt.Println(p.Detail)

	u := lastop.Parse("Updated provider ID")
	fmt.Println(u.Desc, u.Step, u.Detail)
	// Output:
	// s5c-node-get-failed delete-node ip-10-0-0-1
	// etcdserver: leader changed
	// unknown none Updated provider ID
}

func ExampleStepOf() {
	// MCM's own search: the first marker found, in its fixed order.
	fmt.Println(lastop.StepOf("Drain successful. Initiate VM deletion"))
	fmt.Println(lastop.StepOf("Deleting machine from cloud provider"))

	// Error text that embeds a marker reroutes MCM (MCM design problem d.1
	// in doc/mcm-rows.md); Parse
	// still reports the step the text was written for.
	text := "VM deletion failed due to - Set machine status to termination. Now, getting VM Status. Aborting operation. Initiate VM deletion"
	fmt.Println(lastop.StepOf(text), lastop.Parse(text).Step)
	// Output:
	// delete-vm
	// none
	// get-vm-status delete-vm
}
