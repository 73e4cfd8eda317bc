package lifecycle

import "github.com/purelifecycle/machine/driverapi"

// OpEmittable reports whether the op of decision d, made for a machine
// whose deletion was requested or not, is one the outcome check accepts at
// the status d leaves (ops.go): a decision whose own outcome would be
// refused breaks it.
func OpEmittable(d *Decision, deleting bool) bool {
	r := d.OpID.Rule()
	if d.Effects.Len() == 0 || (d.Call.Method == driverapi.MethodNone && !r.handlesWrites()) {
		return true
	}
	return r.emittableAt(&d.Status, deleting)
}
