package phase

// Edge is one declared phase change and the rule that takes it.
type Edge struct {
	// From and To are the phases before and after the change.
	From, To Phase
	// Why names the decision-table rows (MCM's, or this library's) that
	// take the edge.
	Why string
}

// Edges returns every declared phase change, sorted by From then To. The
// slice is fresh; changing it changes nothing here.
func Edges() []Edge {
	var out []Edge
	for from := range Phase(Count) {
		for to := range Phase(Count) {
			if why := edge(from, to); why != "" {
				out = append(out, Edge{From: from, To: to, Why: why})
			}
		}
	}
	return out
}

// Allowed reports whether a machine may go from one phase to another. Staying
// in the same valid phase is always allowed. It does not allocate.
func Allowed(from, to Phase) bool {
	if !from.Valid() || !to.Valid() {
		return false
	}
	i := uint(from)*Count + uint(to)
	if i < 64 {
		return allowedLow>>i&1 != 0
	}
	return allowedHigh>>(i-64)&1 != 0
}

// allowedLow and allowedHigh hold Allowed as a bit matrix, bit
// from*Count+to (121 bits, the low 64 and the rest), so that a step checks
// an edge with a shift rather than edge's switch. edge is the relation they
// are derived from: TestEdgesAgreeWithAllowed fails, and prints the two
// values, when they disagree.
const (
	allowedLow  = 0x3c0102700506d0d7
	allowedHigh = 0x019410c7101bc160
)

// Why returns the rule that takes the change from one phase to another, or
// "" when the change is not declared.
func Why(from, to Phase) string { return edge(from, to) }

// edge is the transition relation, one case per source phase. Every phase
// except Terminating may begin deletion; Terminating ends with the machine
// object gone, which is not a phase.
func edge(from, to Phase) string {
	if !from.Valid() || !to.Valid() || from == to {
		return ""
	}
	if to == Terminating {
		return "deletion begins (X3)"
	}
	switch from {
	case None, CrashLoopBackOff:
		switch to {
		case Pending:
			return "instance created and initialized (B8)"
		case Available:
			return "instance created, no target cluster (B6, B8)"
		case CrashLoopBackOff:
			return "create or initialize failed before the creation timeout (A2-A4, A9, B5)"
		case Failed:
			return "creation timeout (A2-A4, B5) or instance on a stale node (A5)"
		case Running:
			if from == CrashLoopBackOff {
				return "node joined and healthy (H3)"
			}
		}
	case Pending:
		switch to {
		case Running:
			return "node joined and healthy, critical components ready (H3)"
		case Failed:
			return "node did not join before the creation timeout (H7)"
		case CrashLoopBackOff:
			return "re-initialization of the instance failed (B5)"
		}
	case Running:
		switch to {
		case Unknown:
			return "node unhealthy or missing (H1, H4)"
		case InPlaceUpdating:
			return "node drained for MCM's in-place update (I2)"
		}
	case Unknown:
		switch to {
		case Running:
			return "node healthy again (H3)"
		case Failed:
			return "health timeout with the fleet limiter's grant (H9, T4)"
		}
	case Failed:
		if to == Running {
			return "node healthy again, machine recovers (H3)"
		}
	case InPlaceUpdating:
		switch to {
		case InPlaceUpdateSuccessful:
			return "node agent reported success (H5)"
		case InPlaceUpdateFailed:
			return "node agent reported failure or in-place timeout (H6, H8)"
		}
	case InPlaceUpdateSuccessful:
		if to == Running {
			return "node healthy after the in-place update (H3)"
		}
	case InPlaceUpdateFailed:
		switch to {
		case InPlaceUpdateSuccessful:
			return "node agent reported success on retry (H5)"
		case Failed:
			return "health timeout with the fleet limiter's grant (H9, T4)"
		}
	}
	return ""
}
