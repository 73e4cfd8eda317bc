package difftest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/codes"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/purelifecycle/machine/mcmcontroller/mcmfake"
)

// Scenario is one scripted run of one machine: a world to start from and
// the steps that follow, each some actions and one reconcile. The same
// scenario runs through MCM's controller and the project's, each in a
// namespace of its own, and their observations are compared reconcile by
// reconcile.
type Scenario struct {
	// Name names the scenario; it is also part of its namespaces, so it
	// holds only lower-case letters, digits and dashes.
	Name string
	// Rows are the ids of doc/mcm-rows.md the scenario exercises.
	Rows []string
	// World is the state the first step starts from.
	World World
	// Steps run in order.
	Steps []Step
	// Deviations are the differences from MCM accepted for this scenario:
	// each is a deviation of doc/mcm-compat.md with a test of its own.
	Deviations []Deviation
}

// World is what a scenario starts from: one machine, its class and
// secret, the nodes of the target cluster and the instances of the fake
// cloud.
type World struct {
	// Machine is the machine; its namespace is set by the runner. Its
	// status is written after it is created (times left zero are stamped
	// with the time of the write). MCM's finalizer is added when
	// Finalizers is nil; a machine without it has an empty, non-nil list.
	Machine v1alpha1.Machine
	// Deleting marks the machine for deletion once the world is built.
	Deleting bool
	// Class and Secret replace the default class (with MCM's finalizer,
	// named Class, provider "Test") and secret (with userData and MCM's
	// secret finalizer); their
	// namespaces are set by the runner.
	Class  *v1alpha1.MachineClass
	Secret *corev1.Secret
	// NoClass leaves the class out of the world.
	NoClass bool
	// Peers are other machines of the namespace, created with their
	// status (the limiter of T1-T4 counts them).
	Peers []v1alpha1.Machine
	// Nodes are created with their status; condition times left zero are
	// stamped with the time of the write.
	Nodes []corev1.Node
	// Pods are the workloads on the nodes, each bound to its node by
	// spec.nodeName (no kubelet runs them); their namespace is set by the
	// runner.
	Pods []corev1.Pod
	// Instances live in the fake cloud before the first step, each made
	// for the machine (its UID known only once it is created).
	Instances []Instance
	// NeedsInit makes the fake cloud's instances need InitializeMachine.
	NeedsInit bool
	// NoTarget runs the controller without a target cluster: no nodes,
	// no bootstrap tokens, machines Available once created (B8, S1a).
	NoTarget bool
	// Frozen starts the controller frozen, as MCM is while an API server
	// is unreachable (D4); the project's controller sees its observer
	// degraded.
	Frozen bool
}

// Instance is an instance of the fake cloud made before the first step:
// the n-th has providerID ProviderID(n) and node name NodeName(n).
type Instance struct {
	// Machine names the machine it was made for; "" for the scenario's.
	Machine string
	// Foreign makes it an instance of another incarnation: another UID.
	Foreign bool
	// Uninitialized leaves it needing InitializeMachine (with NeedsInit).
	Uninitialized bool
}

// ProviderID returns the providerID of the fake cloud's n-th instance.
func ProviderID(n int) string { return fmt.Sprintf("fake:///zone-a/i-%d", n) }

// NodeName returns the node name of the fake cloud's n-th instance.
func NodeName(n int) string { return fmt.Sprintf("node-%d", n) }

// Code is an MCM machine code, as a driver answers it.
type Code = codes.Code

// ClassName is the name of the default MachineClass.
const ClassName = "class"

// Step is some actions, then one reconcile of the machine.
type Step struct {
	// Do runs before the reconcile, in order.
	Do []Action
	// Rows are the ids of doc/mcm-rows.md this reconcile exercises.
	Rows []string
	// Want checks what MCM's reconcile did, as the rows document it.
	Want []Check
}

// Action changes the world before a reconcile: it scripts the fake cloud,
// writes nodes or the machine, or moves time on.
type Action struct {
	// Name says what the action does, for reports.
	Name string
	// Do carries it out.
	Do func(ctx context.Context, e *Env) error
}

// FailNext queues the codes for the next calls of m about the machine
// (mcmfake.Driver.FailNext).
func FailNext(m mcmfake.Method, cs ...Code) Action {
	return Action{Name: fmt.Sprintf("%s answers %v", m, cs), Do: func(_ context.Context, e *Env) error {
		for _, c := range cs {
			e.Driver.FailNext(m, e.Machine, c)
		}
		return nil
	}}
}

// WithholdNodeName makes the next CreateMachine of the machine answer
// without the node name (mcmfake.Driver.WithholdNodeName).
func WithholdNodeName() Action {
	return Action{Name: "CreateMachine answers no node name", Do: func(_ context.Context, e *Env) error {
		e.Driver.WithholdNodeName(e.Machine, 1)
		return nil
	}}
}

// Hook installs h for the calls of m (mcmfake.Driver.SetHook); nil
// removes it.
func Hook(name string, m mcmfake.Method, h mcmfake.Hook) Action {
	return Action{Name: name, Do: func(_ context.Context, e *Env) error {
		e.Driver.SetHook(m, h)
		return nil
	}}
}

// AddNode creates the node with its status.
func AddNode(n corev1.Node) Action {
	return Action{Name: "add node " + n.Name, Do: func(ctx context.Context, e *Env) error {
		return e.createNode(ctx, n)
	}}
}

// SetNodeConditions sets the named node's conditions of the types of cs,
// stamped now where their times are zero, and keeps those of other types,
// as a kubelet keeps the conditions others write (InPlaceUpdate,
// Preserved, Terminating).
func SetNodeConditions(node string, cs ...corev1.NodeCondition) Action {
	return Action{Name: fmt.Sprintf("node %s conditions %s", node, condString(cs)), Do: func(ctx context.Context, e *Env) error {
		return e.setNodeConditions(ctx, node, cs)
	}}
}

// DeleteNode deletes the named node.
func DeleteNode(node string) Action {
	return Action{Name: "delete node " + node, Do: func(ctx context.Context, e *Env) error {
		return e.deleteNode(ctx, node)
	}}
}

// ChangeNode applies change to the named node's object: its labels and
// annotations (never nil when change runs) and its spec.
func ChangeNode(name, node string, change func(*corev1.Node)) Action {
	return Action{Name: name, Do: func(ctx context.Context, e *Env) error {
		return e.changeNode(ctx, node, change)
	}}
}

// LabelNode sets a label of the named node ("" deletes it).
func LabelNode(node, key, value string) Action {
	return ChangeNode(fmt.Sprintf("node %s label %s=%q", node, key, value), node, func(n *corev1.Node) {
		if value == "" {
			delete(n.Labels, key)
		} else {
			n.Labels[key] = value
		}
	})
}

// AnnotateNode sets an annotation of the named node ("" deletes it).
func AnnotateNode(node, key, value string) Action {
	return ChangeNode(fmt.Sprintf("node %s annotation %s=%q", node, key, value), node, func(n *corev1.Node) {
		if value == "" {
			delete(n.Annotations, key)
		} else {
			n.Annotations[key] = value
		}
	})
}

// DeleteMachine marks the machine for deletion.
func DeleteMachine() Action {
	return Action{Name: "delete the machine", Do: func(ctx context.Context, e *Env) error {
		return e.deleteMachine(ctx)
	}}
}

// Vanish deletes the fake cloud's instance of providerID without a call.
func Vanish(providerID string) Action {
	return Action{Name: "instance " + providerID + " vanishes", Do: func(_ context.Context, e *Env) error {
		if !e.Driver.Vanish(providerID) {
			return fmt.Errorf("no instance %s", providerID)
		}
		return nil
	}}
}

// SetLabel sets a label of the machine ("" deletes it).
func SetLabel(key, value string) Action {
	return Action{Name: fmt.Sprintf("machine label %s=%q", key, value), Do: func(ctx context.Context, e *Env) error {
		return e.setLabel(ctx, key, value)
	}}
}

// AnnotateMachine sets an annotation of the machine ("" deletes it).
func AnnotateMachine(key, value string) Action {
	return Action{Name: fmt.Sprintf("machine annotation %s=%q", key, value), Do: func(ctx context.Context, e *Env) error {
		return e.setAnnotation(ctx, key, value)
	}}
}

// Advance moves the simulated clock d on, by backdating what the
// controllers read (see Env.Advance).
func Advance(d time.Duration) Action {
	return Action{Name: "advance " + d.String(), Do: func(ctx context.Context, e *Env) error {
		return e.Advance(ctx, d)
	}}
}

// Deviation is a difference from MCM a scenario accepts: a deviation of
// doc/mcm-compat.md (its heading, or the start of it) and a test of the
// project named in that deviation's section, which checks it.
type Deviation struct {
	// Step is the index of the step whose reconcile differs; -1 for every
	// step from the first that differs on; [End] for where the runs end,
	// once the machine settled.
	Step int
	// Heading starts the heading of the deviation's section.
	Heading string
	// Test names the test that checks the deviation.
	Test string
	// Only, when set, limits the deviation to the differences that start
	// with it, such as "lastOperation.description" or "all driver calls".
	Only string
}

// covers reports whether d accepts the difference line at step i, first
// being the first step that differed.
func (d *Deviation) covers(i, first int, line string) bool {
	return (d.Step == i || d.Step == -1 && i >= first) && strings.HasPrefix(line, d.Only)
}

// End is the Step of a [Deviation] that accepts differences where the two
// runs end (see [CompareEnds]).
const End = -2

// condString renders conditions briefly, for action names.
func condString(cs []corev1.NodeCondition) string {
	s := ""
	for i, c := range cs {
		if i > 0 {
			s += ","
		}
		s += string(c.Type) + "=" + string(c.Status)
	}
	return s
}

// AddVolumeAttachment creates a VolumeAttachment of a CSI volume to the
// node, as the attach-detach controller would.
func AddVolumeAttachment(name, node string) Action {
	return Action{Name: "attach volume " + name + " to node " + node, Do: func(ctx context.Context, e *Env) error {
		pv := name
		_, err := e.Core.StorageV1().VolumeAttachments().Create(ctx, &storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: storagev1.VolumeAttachmentSpec{Attacher: mcmfake.CSIDriver, NodeName: node,
				Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}},
		}, metav1.CreateOptions{})
		return err
	}}
}
