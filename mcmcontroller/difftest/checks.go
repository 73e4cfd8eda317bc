package difftest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"

	"github.com/purelifecycle/machine/mcmcontroller/mcmfake"
)

// The checks a step's Want is made of. Each names what it expects, so a
// failed one reads as the expectation.

// Phase expects the machine's phase ("" for none).
func Phase(p v1alpha1.MachinePhase) Check {
	return Check{Name: "phase " + q(string(p)), OK: func(o *Observation) bool {
		return !o.Machine.Gone && o.Machine.Phase == string(p)
	}}
}

// Op expects the last operation's type and state.
func Op(typ v1alpha1.MachineOperationType, state v1alpha1.MachineState) Check {
	return Check{Name: "last operation " + string(typ) + "/" + string(state), OK: func(o *Observation) bool {
		return o.Machine.Op.Type == string(typ) && o.Machine.Op.State == string(state)
	}}
}

// Desc expects the last operation's description, normalised.
func Desc(d string) Check {
	return Check{Name: "description " + q(d), OK: func(o *Observation) bool { return o.Machine.Op.Description == d }}
}

// DescHas expects the last operation's description to contain each part.
func DescHas(parts ...string) Check {
	return Check{Name: fmt.Sprintf("description containing %q", parts), OK: func(o *Observation) bool {
		for _, p := range parts {
			if !strings.Contains(o.Machine.Op.Description, p) {
				return false
			}
		}
		return true
	}}
}

// ErrorCode expects the last operation's error code ("" for none).
func ErrorCode(c string) Check {
	return Check{Name: "error code " + q(c), OK: func(o *Observation) bool { return o.Machine.Op.ErrorCode == c }}
}

// Calls expects exactly these driver methods to be called, in order.
func Calls(ms ...mcmfake.Method) Check {
	return Check{Name: fmt.Sprintf("driver calls %v", ms), OK: func(o *Observation) bool {
		got := make([]mcmfake.Method, len(o.Calls))
		for i, c := range o.Calls {
			got[i] = mcmfake.Method(c.Method)
		}
		return slices.Equal(got, ms)
	}}
}

// CallWith expects a call of m whose request names providerID.
func CallWith(m mcmfake.Method, providerID string) Check {
	return Check{Name: fmt.Sprintf("a call %s(%s)", m, providerID), OK: func(o *Observation) bool {
		return slices.ContainsFunc(o.Calls, func(c CallView) bool {
			return c.Method == string(m) && c.ProviderID == providerID
		})
	}}
}

// ProviderIDIs expects the machine's spec.providerID.
func ProviderIDIs(pid string) Check {
	return Check{Name: "providerID " + q(pid), OK: func(o *Observation) bool { return o.Machine.ProviderID == pid }}
}

// NodeLabel expects the machine's node label.
func NodeLabel(n string) Check {
	return Check{Name: "node label " + q(n), OK: func(o *Observation) bool { return o.Machine.NodeLabel == n }}
}

// Finalized expects MCM's finalizer on the machine, or not.
func Finalized(on bool) Check {
	return Check{Name: fmt.Sprintf("MCM's finalizer %v", on), OK: func(o *Observation) bool {
		return slices.Contains(o.Machine.Finalizers, MCMFinalizer) == on
	}}
}

// Gone expects the machine to be gone.
func Gone() Check {
	return Check{Name: "machine gone", OK: func(o *Observation) bool { return o.Machine.Gone }}
}

// Wrote expects a write whose line contains each part.
func Wrote(parts ...string) Check {
	return Check{Name: fmt.Sprintf("a write containing %q", parts), OK: func(o *Observation) bool {
		return slices.ContainsFunc(o.Writes, func(w string) bool {
			for _, p := range parts {
				if !strings.Contains(w, p) {
					return false
				}
			}
			return true
		})
	}}
}

// NoWrites expects no write at all, or none to objects whose key starts
// with one of the prefixes ("machine ", "node ", ...).
func NoWrites(prefixes ...string) Check {
	return Check{Name: fmt.Sprintf("no writes %q", prefixes), OK: func(o *Observation) bool {
		for _, w := range o.Writes {
			if len(prefixes) == 0 {
				return false
			}
			for _, p := range prefixes {
				if strings.HasPrefix(w, p) {
					return false
				}
			}
		}
		return true
	}}
}

// Requeue expects the reconcile to ask for this period.
func Requeue(d time.Duration) Check {
	return Check{Name: "requeue " + d.String(), OK: func(o *Observation) bool { return o.Result.Requeue == d }}
}

// ErrHas expects the reconcile's error to contain s ("" for no error).
func ErrHas(s string) Check {
	return Check{Name: "error containing " + q(s), OK: func(o *Observation) bool {
		if s == "" {
			return o.Err == ""
		}
		return strings.Contains(o.Err, s)
	}}
}
