package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/controller/fakecloud"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// eventScenarios maps every rule that declares an event to the scenario
// (of scenarios below) that records it, so each declared event is recorded
// at least once. The event is checked by reason and by action, which is
// the rule's identifier. A rule the shared environment cannot reach names
// the test that records it instead, after "unit: ": a test of the
// controller's package machines, or a row test of the core that checks
// the decision's event effect.
var eventScenarios = map[lifecycle.Rule]string{
	lifecycle.RuleInputOutOfRange:         "too-many-conditions",
	lifecycle.RuleInvalidMachine:          "bad-annotation",
	lifecycle.RuleClassUnavailable:        "missing-class",
	lifecycle.RuleInvalidNodeTemplate:     "broken-template",
	lifecycle.RuleDeleteBegins:            "life",
	lifecycle.RuleCreateResourceExhausted: "no-capacity",
	lifecycle.RuleCreateTransient:         "create-timeout",
	lifecycle.RuleCreateFailed:            "create-refused",
	lifecycle.RuleCreateStaleNode:         "stale-node",
	lifecycle.RuleCreateCreated:           "life",
	lifecycle.RuleCreateEmptyIdentity:     "no-identity",
	lifecycle.RuleCreateLookupFailed:      "lookup-fails",
	lifecycle.RuleCreateForeignInstance:   "foreign-instance",
	lifecycle.RuleCreateInitFailed:        "init-fails",
	lifecycle.RuleCreatePending:           "life",
	lifecycle.RuleCreateAvailable:         "unit: machines.TestMachineWithoutTargetClusterBecomesAvailable (needs a controller without a target cluster)",
	lifecycle.RuleCreateTimeout:           "create-timeout",
	lifecycle.RuleHealthJoined:            "life",
	lifecycle.RuleHealthRejoined:          "recovers",
	lifecycle.RuleHealthJoinTimeout:       "never-joins",
	lifecycle.RuleHealthUnhealthy:         "life",
	lifecycle.RuleHealthNodeMissing:       "node-deleted",
	lifecycle.RuleHealthTimeout:           "life",
	lifecycle.RuleDeleteDrainFailed:       "drain-refused",
	lifecycle.RuleDeleteVMFailed:          "delete-refused",
	lifecycle.RuleDeleteVMUndecodable:     "delete-undecodable",
	lifecycle.RuleUpdateApplied:           "hot-update",
	lifecycle.RuleUpdateNeedsReplacement:  "update-refused",
	// The in-place update's and preservation's events: the core's row
	// tests check each decision emits its event effect, which the
	// controller records as every other (the scenarios above).
	lifecycle.RuleInPlaceDrainFailed:  "unit: lifecycle.TestInPlaceRows (a write of the drain that fails)",
	lifecycle.RuleInPlaceDrained:      "unit: lifecycle.TestInPlaceRows (I2)",
	lifecycle.RuleInPlaceUpdated:      "unit: lifecycle.TestInPlaceRows (H5)",
	lifecycle.RuleInPlaceFailed:       "unit: lifecycle.TestInPlaceRows (H6)",
	lifecycle.RuleInPlaceTimeout:      "unit: lifecycle.TestInPlaceRows (H8)",
	lifecycle.RuleInPlaceDone:         "unit: lifecycle.TestInPlaceOwnRequest (done)",
	lifecycle.RulePreserve:            "unit: lifecycle.TestPreserveRows (P4, P6, P8)",
	lifecycle.RulePreserveDrainFailed: "unit: lifecycle.TestPreserveInterplay (a write of the preserved node's drain that fails)",
	lifecycle.RulePreserveStop:        "unit: lifecycle.TestPreserveRows (P1, P3)",
}

// scenarios drive one machine each, named m-<scenario>, in a namespace of
// their own, until it records the events eventScenarios expects of them.
var scenarios = map[string]func(t *testing.T, ns, name string){
	"life": func(t *testing.T, ns, name string) {
		_, inst := bringUpWith(t, ns, name, fakeClass(t, ns), 3*time.Second, nil)
		require.NoError(t, fakecloud.SetReady(context.Background(), k8s, inst.NodeName, corev1.ConditionFalse))
		m := waitPhase(t, ns, name, "Failed", 40*time.Second)
		require.NoError(t, k8s.Delete(context.Background(), m))
	},
	"too-many-conditions": func(t *testing.T, ns, name string) {
		var types []string
		for i := range lifecycle.MaxNodeConditions + 1 {
			types = append(types, "Condition"+strconv.Itoa(i))
		}
		list := strings.Join(types, ",")
		newMachineWith(t, ns, name, fakeClass(t, ns), time.Minute, func(m *v1alpha1.Machine) {
			m.Spec.NodeConditions = &list
		})
	},
	"bad-annotation": func(t *testing.T, ns, name string) {
		newMachineWith(t, ns, name, fakeClass(t, ns), time.Minute, func(m *v1alpha1.Machine) {
			metav1.SetMetaDataAnnotation(&m.ObjectMeta, lifecycle.CreationTimeoutAnnotation, "soon")
		})
	},
	"missing-class": func(t *testing.T, ns, name string) {
		newMachineWith(t, ns, name, "missing", time.Minute, nil)
	},
	"broken-template": func(t *testing.T, ns, name string) {
		createClass(t, ns, "broken", `{}`, &v1alpha1.NodeTemplate{Region: "fake-1"})
		newMachineWith(t, ns, name, "broken", time.Minute, nil)
	},
	"no-capacity": func(t *testing.T, ns, name string) {
		faultClass(t, ns, "full", `{"faults":{"CreateMachine":"ResourceExhausted"}}`)
		newMachineWith(t, ns, name, "full", time.Minute, nil)
	},
	"create-refused": func(t *testing.T, ns, name string) {
		faultClass(t, ns, "refusing", `{"faults":{"CreateMachine":"InvalidArgument"}}`)
		newMachineWith(t, ns, name, "refusing", time.Minute, nil)
	},
	"create-timeout": func(t *testing.T, ns, name string) {
		faultClass(t, ns, "unavailable", `{"faults":{"CreateMachine":"Unavailable"}}`)
		newMachineWith(t, ns, name, "unavailable", time.Minute, func(m *v1alpha1.Machine) {
			m.Spec.MachineCreationTimeout = &metav1.Duration{Duration: 4 * time.Second}
		})
	},
	"lookup-fails": func(t *testing.T, ns, name string) {
		faultClass(t, ns, "blind", `{"faults":{"GetMachineStatus":"Internal"}}`)
		newMachineWith(t, ns, name, "blind", time.Minute, nil)
	},
	"no-identity": func(t *testing.T, ns, name string) {
		faultClass(t, ns, "anonymous", `{"omitIdentity":true}`)
		newMachineWith(t, ns, name, "anonymous", time.Minute, nil)
	},
	"init-fails": func(t *testing.T, ns, name string) {
		faultClass(t, ns, "uninitializable", `{"faults":{"InitializeMachine":"Internal"}}`)
		newMachineWith(t, ns, name, "uninitializable", time.Minute, nil)
	},
	"stale-node": func(t *testing.T, ns, name string) {
		// A node of another instance has the name the creation announces.
		node := "stale-" + ns
		require.NoError(t, k8s.Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node},
			Spec: corev1.NodeSpec{ProviderID: "fake:///elsewhere/" + node}}))
		faultClass(t, ns, "stale", `{"announceNode":"`+node+`"}`)
		newMachineWith(t, ns, name, "stale", time.Minute, nil)
	},
	"foreign-instance": func(t *testing.T, ns, name string) {
		// An instance of an older incarnation of the name.
		_, err := provider.CreateMachine(context.Background(), &driverapi.CreateMachineRequest{
			Machine: driverapi.MachineRef{Name: name, UID: "uid-of-an-older-" + name}, IdempotencyKey: "older/0"})
		require.NoError(t, err)
		newMachineWith(t, ns, name, fakeClass(t, ns), time.Minute, nil)
	},
	"never-joins": func(t *testing.T, ns, name string) {
		newMachineWith(t, ns, name, fakeClass(t, ns), time.Minute, func(m *v1alpha1.Machine) {
			m.Spec.MachineCreationTimeout = &metav1.Duration{Duration: 4 * time.Second}
		})
	},
	"recovers": func(t *testing.T, ns, name string) {
		_, inst := bringUpWith(t, ns, name, fakeClass(t, ns), time.Minute, nil)
		require.NoError(t, fakecloud.SetReady(context.Background(), k8s, inst.NodeName, corev1.ConditionFalse))
		waitPhase(t, ns, name, "Unknown", 20*time.Second)
		require.NoError(t, fakecloud.SetReady(context.Background(), k8s, inst.NodeName, corev1.ConditionTrue))
	},
	"node-deleted": func(t *testing.T, ns, name string) {
		_, inst := bringUpWith(t, ns, name, fakeClass(t, ns), time.Minute, nil)
		require.NoError(t, k8s.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: inst.NodeName}}))
	},
	"drain-refused": func(t *testing.T, ns, name string) {
		// One eviction round (20 s) ends the unforced drain, failed, before
		// the drain timeout forces it.
		_, inst := bringUpWith(t, ns, name, fakeClass(t, ns), time.Minute, func(m *v1alpha1.Machine) {
			one := int32(1)
			m.Spec.MaxEvictRetries = &one
			m.Spec.MachineDrainTimeout = &metav1.Duration{Duration: 2 * time.Minute}
		})
		// A pod on the node that its disruption budget keeps from eviction.
		ctx := context.Background()
		labels := map[string]string{"app": "kept"}
		require.NoError(t, k8s.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept", Labels: labels},
			Spec: corev1.PodSpec{NodeName: inst.NodeName, Containers: []corev1.Container{{Name: "c", Image: "kept"}}}}))
		one := intstr.FromInt32(1)
		require.NoError(t, k8s.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keep"},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: labels}}}))
		require.NoError(t, k8s.Delete(ctx, getMachine(t, ns, name)))
	},
	"delete-refused": func(t *testing.T, ns, name string) {
		faultClass(t, ns, "undeletable", `{"faults":{"DeleteMachine":"Internal"}}`)
		newMachineWith(t, ns, name, "undeletable", time.Minute, nil)
		require.NoError(t, k8s.Delete(context.Background(), waitPhase(t, ns, name, "Pending", 30*time.Second)))
	},
	"delete-undecodable": func(t *testing.T, ns, name string) {
		faultClass(t, ns, "odd", `{"faults":{"DeleteMachine":"Undecodable"}}`)
		newMachineWith(t, ns, name, "odd", time.Minute, nil)
		require.NoError(t, k8s.Delete(context.Background(), waitPhase(t, ns, name, "Pending", 30*time.Second)))
	},
	"hot-update": func(t *testing.T, ns, name string) {
		bringUpWith(t, ns, name, fakeClass(t, ns), time.Minute, nil)
		raiseUpdateGeneration(t, ns, name)
	},
	"update-refused": func(t *testing.T, ns, name string) {
		faultClass(t, ns, "fixed", `{"faults":{"UpdateMachine":"Unimplemented"}}`)
		bringUpWith(t, ns, name, "fixed", time.Minute, nil)
		raiseUpdateGeneration(t, ns, name)
	},
}

// faultClass creates a class whose provider spec asks the fake provider
// for faults (fakecloud.ClassFaults).
func faultClass(t *testing.T, ns, name, spec string) {
	t.Helper()
	createClass(t, ns, name, spec, nil)
}

// newMachineWith creates a machine of the class, with the timeouts
// newMachine gives and what mutate changes.
func newMachineWith(t *testing.T, ns, name, class string, health time.Duration, mutate func(*v1alpha1.Machine)) {
	t.Helper()
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.MachineSpec{
			Class: v1alpha1.ClassSpec{Name: class},
			MachineConfiguration: v1alpha1.MachineConfiguration{
				MachineCreationTimeout: &metav1.Duration{Duration: 2 * time.Minute},
				MachineHealthTimeout:   &metav1.Duration{Duration: health},
				MachineDrainTimeout:    &metav1.Duration{Duration: 20 * time.Second},
			},
		},
	}
	if mutate != nil {
		mutate(m)
	}
	require.NoError(t, k8s.Create(context.Background(), m))
}

// bringUpWith is bringUp for a machine of the class.
func bringUpWith(t *testing.T, ns, name, class string, health time.Duration, mutate func(*v1alpha1.Machine)) (*v1alpha1.Machine, fakecloud.Instance) {
	t.Helper()
	newMachineWith(t, ns, name, class, health, mutate)
	waitPhase(t, ns, name, "Pending", 30*time.Second)
	inst, ok := provider.InstanceOf(name)
	require.True(t, ok, "no instance for %s", name)
	require.NoError(t, fakecloud.RegisterNode(context.Background(), k8s, inst))
	return waitPhase(t, ns, name, "Running", 30*time.Second), inst
}

// raiseUpdateGeneration asks for a hot update of the machine.
func raiseUpdateGeneration(t *testing.T, ns, name string) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m := getMachine(t, ns, name)
		m.Spec.UpdateGeneration++
		return k8s.Update(context.Background(), m)
	}))
}

// ruleEvents returns the machine's events as "Type Reason action".
func ruleEvents(t *testing.T, ns, machine string) []string {
	t.Helper()
	var out []string
	for _, e := range machineEvents(t, ns, machine) {
		out = append(out, e.Type+" "+e.Reason+" "+e.Action)
	}
	return out
}

// normalReasons are the reasons of good news, recorded as Normal events.
var normalReasons = []string{"InstanceCreated", "InstanceReady", "MachineAvailable", "MachineRunning", "MachineTerminating",
	"HotUpdateApplied"}

// Every rule that declares an event has it recorded on its machine by some
// scenario, with the rule as the event's action.
func TestEveryDeclaredEventIsRecorded(t *testing.T) {
	needEnv(t)
	want := map[string][]string{}
	for _, r := range lifecycle.Rules() {
		if r.Event() == "" {
			require.NotContains(t, eventScenarios, r, "rule %s declares no event", r)
			continue
		}
		scenario, ok := eventScenarios[r]
		require.True(t, ok, "rule %s declares event %s and no scenario records it", r, r.Event())
		if _, unit := scenarios[scenario]; !unit {
			require.Regexp(t, `^unit: (machines|lifecycle)\.Test`, scenario, "rule %s: no scenario %q", r, scenario)
			continue
		}
		typ := "Warning"
		if slices.Contains(normalReasons, r.Event()) {
			typ = "Normal"
		}
		want[scenario] = append(want[scenario], typ+" "+r.Event()+" "+r.String())
	}
	for name, run := range scenarios {
		require.NotEmpty(t, want[name], "scenario %s records no event of the table", name)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			machine := "m-" + name
			run(t, ns, machine)
			eventually(t, 90*time.Second, machine+" records "+fmt.Sprint(want[name]), func() (bool, string) {
				got := ruleEvents(t, ns, machine)
				for _, w := range want[name] {
					if !slices.Contains(got, w) {
						return false, fmt.Sprint(got)
					}
				}
				return true, ""
			})
		})
	}
}

// The event notes are sentences, with no Go struct in them.
func TestEventNotesAreSentences(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	_, inst := bringUpWith(t, ns, "m-notes", fakeClass(t, ns), time.Minute, nil)
	require.NoError(t, fakecloud.SetReady(context.Background(), k8s, inst.NodeName, corev1.ConditionFalse))
	eventually(t, 30*time.Second, "unhealthy event", func() (bool, string) {
		notes := eventNotes(t, ns, "m-notes", "MachineUnhealthy")
		return len(notes) > 0, fmt.Sprint(ruleEvents(t, ns, "m-notes"))
	})
	note := eventNotes(t, ns, "m-notes", "MachineUnhealthy")[0]
	require.Regexp(t, `^The node is unhealthy\. Machine m-notes is unhealthy - changing MachinePhase to Unknown\. Node conditions: Ready=False \(KubeletReady\)\.$`, note)
	for _, e := range machineEvents(t, ns, "m-notes") {
		require.NotContains(t, e.Note, "{Type:", "%s", e.Reason)
		require.NotContains(t, e.Note, "&{", "%s", e.Reason)
	}
}
