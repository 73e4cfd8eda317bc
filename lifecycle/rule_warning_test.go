package lifecycle_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lifecycle"
)

// A rule's event is a Warning exactly when the machine needs attention;
// the events of good news are Normal, and a rule without an event is not
// a warning.
func TestRuleWarningsAreTheEventsOfTrouble(t *testing.T) {
	normal := map[string]bool{"InstanceCreated": true, "InstanceReady": true, "MachineAvailable": true,
		"MachineRunning": true, "MachineTerminating": true, "HotUpdateApplied": true,
		"InPlaceUpdating": true, "InPlaceUpdateSuccessful": true, "InPlaceUpdated": true,
		"MachinePreserved": true, "PreservationStopped": true}
	for _, r := range lifecycle.Rules() {
		switch ev := r.Event(); {
		case ev == "":
			require.False(t, r.Warning(), "rule %s has no event", r)
		default:
			require.Equal(t, !normal[ev], r.Warning(), "rule %s (%s)", r, ev)
		}
	}
	require.False(t, lifecycle.Rule(255).Warning())
}
