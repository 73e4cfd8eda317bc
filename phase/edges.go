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
	return from.Valid() && to.Valid() && allowed[from]>>to&1 != 0
}

// allowed is Allowed as a bit matrix, one row per source phase: bit to of
// allowed[from] is set when Allowed(from, to). A step thus checks an edge
// with a shift rather than a search of edges. The matrix is derived from
// edges, the one source of the relation, once at package initialization,
// and only read afterwards (doc/tables_test.go checks that no code of the
// package writes it): a value computed from constant data, not mutable
// state.
var allowed = allowedMatrix()

// allowedMatrix returns the bit matrix of allowed: every declared edge, and
// every valid phase to itself.
func allowedMatrix() [Count]uint16 {
	var m [Count]uint16
	for from := range Phase(Count) {
		for to := range Phase(Count) {
			if from == to || edge(from, to) != "" {
				m[from] |= 1 << to
			}
		}
	}
	return m
}

// Why returns the rule that takes the change from one phase to another, or
// "" when the change is not declared.
func Why(from, to Phase) string { return edge(from, to) }

// edges is the transition relation: every declared change of phase but
// the beginning of deletion, which every phase except Terminating may take
// (Terminating ends with the machine object gone, which is not a phase).
// It is only read (a test in doc/tables_test.go checks).
var edges = [...]Edge{
	{None, Pending, "instance created and initialized (B8)"},
	{None, Available, "instance created, no target cluster (B6, B8)"},
	{None, CrashLoopBackOff, "create or initialize failed before the creation timeout (A2-A4, A9, B5)"},
	{None, Failed, "creation timeout (A2-A4, B5) or instance on a stale node (A5)"},
	{CrashLoopBackOff, Pending, "instance created and initialized (B8)"},
	{CrashLoopBackOff, Available, "instance created, no target cluster (B6, B8)"},
	{CrashLoopBackOff, Failed, "creation timeout (A2-A4, B5) or instance on a stale node (A5)"},
	{CrashLoopBackOff, Running, "node joined and healthy (H3)"},
	{Pending, Running, "node joined and healthy, critical components ready (H3)"},
	{Pending, Failed, "node did not join before the creation timeout (H7)"},
	{Pending, CrashLoopBackOff, "re-initialization of the instance failed (B5)"},
	{Running, Unknown, "node unhealthy or missing (H1, H4)"},
	{Running, InPlaceUpdating, "node drained for MCM's in-place update (I2)"},
	{Unknown, Running, "node healthy again (H3)"},
	{Unknown, Failed, "health timeout with the fleet limiter's grant (H9, T4)"},
	{Failed, Running, "node healthy again, machine recovers (H3)"},
	{InPlaceUpdating, InPlaceUpdateSuccessful, "node agent reported success (H5)"},
	{InPlaceUpdating, InPlaceUpdateFailed, "node agent reported failure or in-place timeout (H6, H8)"},
	{InPlaceUpdateSuccessful, Running, "node healthy after the in-place update (H3)"},
	{InPlaceUpdateSuccessful, Unknown, "node unhealthy or missing after the in-place update (H1, H4)"},
	{InPlaceUpdateFailed, InPlaceUpdateSuccessful, "node agent reported success on retry (H5)"},
	{InPlaceUpdateFailed, Failed, "health timeout with the fleet limiter's grant (H9, T4)"},
}

// edge returns the rule that takes the change from one phase to another,
// or "" when the change is not declared.
func edge(from, to Phase) string {
	if !from.Valid() || !to.Valid() || from == to {
		return ""
	}
	if to == Terminating {
		return "deletion begins (X3)"
	}
	for i := range len(edges) {
		if edges[i].From == from && edges[i].To == to {
			return edges[i].Why
		}
	}
	return ""
}
