package lifecycle

import (
	"reflect"
	"testing"
	"time"

	"github.com/purelifecycle/machine/phase"
)

// MemberOf resolves every field of a Member from the input, each from its
// own source: the object, the status, the observer, the shell's findings.
func TestMemberOfResolvesTheInput(t *testing.T) {
	at := func(minute int) time.Time { return orphansNow.Add(time.Duration(minute) * time.Minute) }
	cfg := DefaultConfig()
	in := Input{
		Object: Object{Name: "m-1", UID: "uid-1", Owner: "ms-1", ProviderID: "p-object", CreationTime: at(1),
			DeletionTime: at(2), Finalizer: true, UpdateGeneration: 3, Metadata: map[string]string{"team": "a"},
			Overrides: Overrides{HealthTimeout: time.Minute, CreationTimeout: 2 * time.Minute,
				DrainTimeout: 3 * time.Minute, InPlaceUpdateTimeout: 4 * time.Minute, PreserveTimeout: 5 * time.Minute,
				DisableHealthTimeout: true}, Preserve: PreserveWhenFailed},
		Status: Status{Phase: phase.Terminating, Stage: StageDrain, Flags: FlagTerminated | FlagGranted,
			PhaseSince: StampOf(at(4)), StageSince: StampOf(at(5)), RetryAfter: StampOf(at(6)),
			CreationFrom: StampOf(at(7)), PreserveUntil: StampOf(at(10)), ProviderID: "p-status", AppliedGeneration: 2, OwnerUID: "uid-1",
			Metadata: map[string]string{"team": "a"}},
		Observer:               Observer{Degraded: true, Since: at(8)},
		PredecessorTerminating: true,
		Problem:                ProblemClassUnavailable,
		Node:                   Node{Name: "n-1", Zone: "zone-a"},
		Grant:                  Grant{Held: at(9)},
	}
	want := Member{name: "m-1", uid: "uid-1", owner: "ms-1", providerID: "p-status",
		phase: phase.Terminating, stage: StageDrain, flags: FlagTerminated | FlagGranted,
		phaseSince: StampOf(at(4)), stageSince: StampOf(at(5)), retryAfter: StampOf(at(6)), preserveUntil: StampOf(at(10)),
		creationTime: StampOf(at(1)), deletionTime: StampOf(at(2)), creationFrom: StampOf(at(7)),
		observerSince: StampOf(at(8)), deleting: true, finalizer: true, observerDegraded: true,
		predecessorTerminating: true, disableHealthTimeout: true, updatePending: true, metadataInSync: true,
		problem: ProblemClassUnavailable, healthTimeout: time.Minute, creationTimeout: 2 * time.Minute,
		drainTimeout: 3 * time.Minute, inPlaceTimeout: 4 * time.Minute, zone: "zone-a", held: StampOf(at(9)),
		preserveNamed: true, preserveTimeout: 5 * time.Minute}
	if got := MemberOf(&cfg, &in); !reflect.DeepEqual(got, want) {
		t.Fatalf("MemberOf:\n%+v\nwant\n%+v", got, want)
	}
	// Every field was set apart from its zero: a field MemberOf forgot
	// would show above.
	v := reflect.ValueOf(want)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("the test leaves %s zero", v.Type().Field(i).Name)
		}
	}

	// The object's providerID stands in for a status that records none;
	// no deletion time, no deletion.
	in.Status.ProviderID, in.Object.DeletionTime = "", time.Time{}
	m := MemberOf(&cfg, &in)
	if m.providerID != "p-object" || m.deleting || m.deletionTime != 0 {
		t.Errorf("providerID %q, deleting %v at %d", m.providerID, m.deleting, m.deletionTime)
	}
}
