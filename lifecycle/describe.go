package lifecycle

import (
	"strings"
	"time"

	"github.com/purelifecycle/machine/lastop"
)

// Describe returns the description MCM would show for the status' last
// operation of the named machine: its exact text, rendered now (it
// allocates; the core itself never renders text).
func Describe(st *Status, machine string) string {
	return st.LastOp.Describe(args(st, machine))
}

// LastOperation returns the status' last operation as MCM's record, with
// its description rendered and the given update time (the time the shell
// persisted the status).
func LastOperation(st *Status, machine string, at time.Time) lastop.LastOperation {
	return st.LastOp.Render(args(st, machine), at)
}

func args(st *Status, machine string) lastop.Args {
	a := lastop.Args{Machine: machine, Node: st.NodeName}
	if strings.Contains(st.LastOp.Desc.Format(), "<conditions>") {
		cs := make([]lastop.NodeCondition, len(st.Conditions))
		for i, c := range st.Conditions {
			cs[i] = lastop.NodeCondition{Type: c.Type, Status: c.Status.String(),
				LastTransitionTime: c.Since.Time(), Reason: c.Reason, Message: c.Message}
		}
		a.Conditions = lastop.FormatConditions(cs)
	}
	return a
}
