package fleetsim

// brokenWorld: test hooks, each a deliberately broken behaviour of the
// shell, the world or the lifecycle's configuration, for a check that must
// catch it.
type brokenWorld struct {
	// fakeDrain: the shell reports no pods left on a node being drained (it
	// never counts them), so the lifecycle ends drains the world did not
	// see end.
	fakeDrain bool
	// noPredecessor: the shell never sets Input.PredecessorTerminating.
	noPredecessor bool
	// lieMetadata: GetMachineStatus reports the metadata the machine asks
	// for instead of what its instance carries.
	lieMetadata bool
	// forgetRecovery: the shell reports a healthy observer without the time
	// it recovered (Observer.Since zero), to the steps and to the limiter.
	forgetRecovery bool
	// hideInFlight: the limiter's fleet view shows none of the controller's
	// own writes that put a machine in flight (a grant, Failed, a deletion,
	// a creation): every machine it shows is Running.
	hideInFlight bool
	// noTolerance: the checks allow nothing for the clock faults.
	noTolerance bool
	// noZoneProtection: the lifecycle runs with Config.ZoneOutage off,
	// while the checks hold it to the protection the options ask for.
	noZoneProtection bool
	// holdEveryZone: the lifecycle runs with a protection that holds every
	// zone with an unhealthy machine for ten hours.
	holdEveryZone bool

	// fakeKeepDrain: as fakeDrain, for the nodes of machines not being
	// deleted only: the drains before an in-place update and of a
	// preserved node.
	fakeKeepDrain bool
	// noCordon: the shell reports a cordon done without cordoning the
	// node, and reports the node cordoned.
	noCordon bool
	// hideVerdict: the shell never reads the node agent's update-result
	// label, so the lifecycle never learns of its verdict.
	hideVerdict bool
	// hideNodePreserve: the shell never reads a node's preserve
	// annotation.
	hideNodePreserve bool
	// preserveAll: the shell hands every Failed machine the preservation
	// grant (Grant.Preserve), whatever the limiter says.
	preserveAll bool
	// keepAnnotation: the shell reports the removal of a machine's
	// annotation done without removing it.
	keepAnnotation bool
	// keepScaleDown: the shell reports the removal of a node's annotation
	// done without removing it.
	keepScaleDown bool
	// hidePreserveGrant: the shell never hands the steps the limiter's
	// preservation grant, which the owner still respects.
	hidePreserveGrant bool
	// noUncordon: the shell reports an uncordon done without uncordoning.
	noUncordon bool
}
