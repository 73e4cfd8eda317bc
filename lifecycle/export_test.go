package lifecycle

import "github.com/purelifecycle/machine/driverapi"

// OpEmittable reports whether the op of decision d, made for a machine
// whose deletion was requested or not, is one the outcome check accepts at
// the status d leaves (ops.go), and whether its driver call is the one the
// rule table routes to the op's handler: a decision whose own outcome would
// be refused breaks it.
func OpEmittable(d *Decision, deleting bool) bool {
	r := d.OpID.Rule()
	spec, ok := r.spec()
	if d.Effects.Len() == 0 {
		return true
	}
	if !ok {
		return false
	}
	if d.Call.Method != driverapi.MethodNone && (spec.handler == handleNone || spec.method != d.Call.Method) {
		return false
	}
	if d.Call.Method == driverapi.MethodNone && !spec.handlesWrites() {
		return true
	}
	return r.emittableAt(&d.Status, deleting)
}
