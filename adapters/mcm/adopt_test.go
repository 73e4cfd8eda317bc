package mcm

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/pass"
	"github.com/purelifecycle/machine/phase"
)

var (
	created   = time.Date(2026, 8, 19, 9, 50, 0, 0, time.UTC)
	entered   = time.Date(2026, 8, 19, 9, 55, 0, 0, time.UTC) // currentStatus.lastUpdateTime
	adoptedAt = time.Date(2026, 8, 19, 10, 0, 0, 0, time.UTC)
)

// mcmMachine is a machine as MCM leaves it: phase, last operation, node
// label, providerID and finalizer, and no annotation of ours.
func mcmMachine(ph v1alpha1.MachinePhase, typ v1alpha1.MachineOperationType, state v1alpha1.MachineState, code, desc string) *v1alpha1.Machine {
	m := newMachine()
	m.CreationTimestamp = metav1.NewTime(created)
	m.Finalizers = []string{lifecycle.Finalizer}
	m.Labels = map[string]string{lifecycle.NodeLabel: "node-1", "name": "worker"}
	m.Annotations = map[string]string{lifecycle.PriorityAnnotation: "3"}
	m.Spec.ProviderID = "aws:///eu-west-1/i-1"
	m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: ph, LastUpdateTime: metav1.NewTime(entered),
		TimeoutActive: ph == v1alpha1.MachinePending}
	m.Status.LastOperation = v1alpha1.LastOperation{Description: desc, ErrorCode: code, State: state, Type: typ,
		LastUpdateTime: metav1.NewTime(entered.Add(time.Minute))}
	if ph == v1alpha1.MachineTerminating {
		at := metav1.NewTime(entered)
		m.DeletionTimestamp = &at
	}
	return m
}

// readyNode is the machine's node as the kubelet registered it.
func readyNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{lifecycle.MachineNameLabel: "m-1"},
			Finalizers: []string{lifecycle.NodeFinalizer}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///eu-west-1/i-1"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(2 * time.Minute)), Reason: "KubeletReady"},
		}},
	}
}

// withConditions gives m the conditions MCM mirrored from its node,
// heartbeats included.
func withConditions(cs []corev1.NodeCondition, m *v1alpha1.Machine) *v1alpha1.Machine {
	m.Status.Conditions = cs
	return m
}

// notReady are the conditions of a node whose kubelet stopped reporting,
// as the API server last heard at heartbeat.
func notReady(heartbeat time.Time) []corev1.NodeCondition {
	return []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastHeartbeatTime: metav1.NewTime(heartbeat),
		LastTransitionTime: metav1.NewTime(entered), Reason: "KubeletNotReady", Message: "PLEG is not healthy"}}
}

func kinds(d *lifecycle.Decision) []lifecycle.Kind {
	var out []lifecycle.Kind
	for _, e := range d.Effects.Slice() {
		out = append(out, e.Kind)
	}
	return out
}

func TestAdoptMCMStatuses(t *testing.T) {
	const (
		del  = v1alpha1.MachineOperationDelete
		proc = v1alpha1.MachineStateProcessing
	)
	unhealthy := lastop.FormatConditions([]lastop.NodeCondition{{Type: "Ready", Status: "False",
		LastHeartbeatTime: entered, LastTransitionTime: entered, Reason: "KubeletNotReady", Message: "PLEG is not healthy"}})
	drain := []lifecycle.Kind{lifecycle.KindSetNodeCondition, lifecycle.KindCordon, lifecycle.KindDrain}
	tests := []struct {
		name    string
		machine *v1alpha1.Machine
		node    func(*corev1.Node) *corev1.Node
		// attachments counts the node's live VolumeAttachments.
		attachments int
		wantDesc    lastop.Desc
		wantRule    lifecycle.Rule
		// wantStage is the stage after the first step.
		wantStage lifecycle.Stage
		wantKinds []lifecycle.Kind
		wantCall  driverapi.Method
	}{
		{
			name:     "X4 getting VM status",
			machine:  mcmMachine(v1alpha1.MachineTerminating, del, proc, "", "Set machine status to termination. Now, getting VM Status"),
			wantDesc: lastop.DescTerminating, wantRule: lifecycle.RuleDeleteAdopted, wantStage: lifecycle.StageDrain, wantKinds: drain,
		},
		{
			name:     "X5 initiate drain",
			machine:  mcmMachine(v1alpha1.MachineTerminating, del, proc, "", "Initiate node drain"),
			wantDesc: lastop.DescInitiateDrain, wantRule: lifecycle.RuleDeleteAdopted, wantStage: lifecycle.StageDrain, wantKinds: drain,
		},
		{
			name: "X5 drain failed, retried",
			machine: mcmMachine(v1alpha1.MachineTerminating, del, v1alpha1.MachineStateFailed, "",
				"Drain failed due to - Cannot evict pod as it would violate the pod's disruption budget.. Will retry in next sync. Initiate node drain"),
			wantDesc: lastop.DescDrainFailed, wantRule: lifecycle.RuleDeleteAdopted, wantStage: lifecycle.StageDrain, wantKinds: drain,
		},
		{
			name:     "X6 force drained, volume attachments",
			machine:  mcmMachine(v1alpha1.MachineTerminating, del, proc, "", "Force Drain successful. Delete Volume Attachments"),
			wantDesc: lastop.DescForceDrainSucceeded, wantRule: lifecycle.RuleDeleteAdopted, wantStage: lifecycle.StageDeleteVM,
			wantKinds: []lifecycle.Kind{lifecycle.KindCallDriver}, wantCall: driverapi.MethodDelete,
		},
		{
			name: "X6 force drained, volumes still attached",
			machine: mcmMachine(v1alpha1.MachineTerminating, del, proc, "",
				"Drain failed due to - timed out. However, since it's a force deletion shall continue deletion of VM. Delete Volume Attachments"),
			node: func(n *corev1.Node) *corev1.Node {
				n.Status.VolumesAttached = []corev1.AttachedVolume{{Name: "kubernetes.io/csi/ebs^vol-1"}}
				return n
			},
			attachments: 1,
			wantDesc:    lastop.DescForceDrainFailed, wantRule: lifecycle.RuleDeleteAdopted, wantStage: lifecycle.StageVolumes,
			wantKinds: []lifecycle.Kind{lifecycle.KindDeleteVolumeAttachments},
		},
		{
			name:     "X7 initiate VM deletion",
			machine:  mcmMachine(v1alpha1.MachineTerminating, del, proc, "", "Drain successful. Initiate VM deletion"),
			wantDesc: lastop.DescDrainSucceeded, wantRule: lifecycle.RuleDeleteAdopted, wantStage: lifecycle.StageDeleteVM,
			wantKinds: []lifecycle.Kind{lifecycle.KindCallDriver}, wantCall: driverapi.MethodDelete,
		},
		{
			name: "X7 VM deletion failed, retried",
			machine: mcmMachine(v1alpha1.MachineTerminating, del, v1alpha1.MachineStateFailed, "",
				"VM deletion failed due to - machine codes error: code = [Unavailable] message = [cloud API throttled]. However, will re-try in the next resync. Initiate VM deletion"),
			wantDesc: lastop.DescVMDeletionRetry, wantRule: lifecycle.RuleDeleteAdopted, wantStage: lifecycle.StageDeleteVM,
			wantKinds: []lifecycle.Kind{lifecycle.KindCallDriver}, wantCall: driverapi.MethodDelete,
		},
		{
			name:     "X8 initiate node object deletion",
			machine:  mcmMachine(v1alpha1.MachineTerminating, del, proc, "", "VM deletion was successful. Initiate node object deletion"),
			wantDesc: lastop.DescVMDeleted, wantRule: lifecycle.RuleDeleteAdopted, wantStage: lifecycle.StageDeleteNode,
			wantKinds: []lifecycle.Kind{lifecycle.KindRemoveNodeFinalizer, lifecycle.KindDeleteNode},
		},
		{
			name:     "X8 VM not found",
			machine:  mcmMachine(v1alpha1.MachineTerminating, del, proc, "", "VM not found. Continuing deletion flow. Initiate node object deletion"),
			wantDesc: lastop.DescVMNotFound, wantRule: lifecycle.RuleDeleteAdopted, wantStage: lifecycle.StageDeleteNode,
			wantKinds: []lifecycle.Kind{lifecycle.KindRemoveNodeFinalizer, lifecycle.KindDeleteNode},
		},
		{
			name: "X9 finalizer removal",
			machine: mcmMachine(v1alpha1.MachineTerminating, del, proc, "",
				`Deletion of Node Object "node-1" is successful. Initiate machine object finalizer removal`),
			node:     func(*corev1.Node) *corev1.Node { return nil },
			wantDesc: lastop.DescNodeDeleted, wantRule: lifecycle.RuleDeleteAdopted, wantStage: lifecycle.StageRemoveFinalizer,
			wantKinds: []lifecycle.Kind{lifecycle.KindRemoveFinalizer},
		},
		{
			name:     "X10 MachineSet's deletion text restarts the pipeline",
			machine:  mcmMachine(v1alpha1.MachineTerminating, del, proc, "", "Deleting machine from cloud provider"),
			wantDesc: lastop.DescMachineSetDeleting, wantRule: lifecycle.RuleDeleteRestart, wantStage: lifecycle.StageDrain, wantKinds: drain,
		},
		{
			name:     "Pending, node not ready yet",
			machine:  mcmMachine(v1alpha1.MachinePending, v1alpha1.MachineOperationCreate, proc, "", "Creating machine on cloud provider"),
			node:     func(*corev1.Node) *corev1.Node { return nil },
			wantDesc: lastop.DescCreating, wantRule: lifecycle.RuleHealthWaitJoin,
		},
		{
			name:     "Pending, node joined",
			machine:  mcmMachine(v1alpha1.MachinePending, v1alpha1.MachineOperationCreate, proc, "", "Creating machine on cloud provider"),
			wantDesc: lastop.DescCreating, wantRule: lifecycle.RuleHealthJoined, wantKinds: []lifecycle.Kind{lifecycle.KindEvent},
		},
		{
			name: "Running",
			machine: mcmMachine(v1alpha1.MachineRunning, v1alpha1.MachineOperationCreate, v1alpha1.MachineStateSuccessful, "",
				"Machine m-1 successfully joined the cluster in 2m3.5s"),
			wantDesc: lastop.DescJoined, wantRule: lifecycle.RuleMetadataObserve,
			wantKinds: []lifecycle.Kind{lifecycle.KindCallDriver}, wantCall: driverapi.MethodGetStatus,
		},
		{
			name: "Unknown, node still unhealthy",
			machine: withConditions(notReady(entered), mcmMachine(v1alpha1.MachineUnknown, v1alpha1.MachineOperationHealthCheck, proc, "",
				"Machine m-1 is unhealthy - changing MachinePhase to Unknown. Node conditions: "+unhealthy)),
			node: func(n *corev1.Node) *corev1.Node {
				n.Status.Conditions = notReady(entered.Add(4 * time.Minute))
				return n
			},
			wantDesc: lastop.DescUnhealthy, wantRule: lifecycle.RuleHealthWaitUnknown,
		},
		{
			name: "CrashLoopBackOff with an error code",
			machine: mcmMachine(v1alpha1.MachineCrashLoopBackOff, v1alpha1.MachineOperationCreate, v1alpha1.MachineStateFailed, "ResourceExhausted",
				"Cloud provider message - machine codes error: code = [ResourceExhausted] message = [VcpuLimitExceeded]"),
			node:     func(*corev1.Node) *corev1.Node { return nil },
			wantDesc: lastop.DescCloudProviderError, wantRule: lifecycle.RuleCreateLookup,
			wantKinds: []lifecycle.Kind{lifecycle.KindCallDriver}, wantCall: driverapi.MethodGetStatus,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := viaJSON(t, tt.machine)
			st, err := StatusFrom(m)
			require.NoError(t, err)
			want, err := phase.Parse(string(tt.machine.Status.CurrentStatus.Phase))
			require.NoError(t, err)
			require.Equal(t, want, st.Phase)
			require.Equal(t, lifecycle.StageNone, st.Stage, "MCM keeps no stage")
			require.Equal(t, tt.wantDesc, st.LastOp.Desc)
			require.Equal(t, tt.machine.Status.LastOperation.ErrorCode, st.LastOp.ErrorCode)
			require.Equal(t, lifecycle.StampOf(entered), st.PhaseSince, "the phase's clock is currentStatus.lastUpdateTime")
			require.Equal(t, "aws:///eu-west-1/i-1", st.ProviderID)
			require.Equal(t, "node-1", st.NodeName)
			// Persisting the adopted status changes nothing MCM wrote.
			again := m.DeepCopy()
			ApplyStatus(st, again, adoptedAt)
			require.Equal(t, viaJSON(t, m).Status, viaJSON(t, again).Status)

			node := readyNode()
			if tt.node != nil {
				node = tt.node(node)
			}
			d := lifecycle.Step(lifecycle.DefaultConfig(), lifecycle.Input{
				Now: adoptedAt, Object: ObjectFrom(m), Status: st, Node: NodeFrom(node), VolumeAttachments: tt.attachments,
			})
			require.Equal(t, tt.wantRule, d.Rule, "%s", d.String())
			require.Equal(t, tt.wantStage, d.Status.Stage, "%s", d.String())
			require.Equal(t, tt.wantKinds, kinds(&d), "%s", d.String())
			require.Equal(t, tt.wantCall, d.Call.Method, "%s", d.String())

			// The decision's status reads back exactly once persisted.
			ApplyStatus(d.Status, m, adoptedAt)
			back, err := StatusFrom(viaJSON(t, m))
			require.NoError(t, err)
			require.Equal(t, d.Status, back)
		})
	}
}

// TestAdoptAfterMCMWroteAgain: a machine the library managed and MCM
// managed again since is adopted from MCM's fields; the annotation's
// creation attempt is kept.
func TestAdoptAfterMCMWroteAgain(t *testing.T) {
	m := mcmMachine(v1alpha1.MachineRunning, v1alpha1.MachineOperationHealthCheck, v1alpha1.MachineStateSuccessful, "",
		"Machine m-1 successfully re-joined the cluster")
	ApplyStatus(lifecycle.Status{Phase: phase.Running, Attempt: 3, Seq: 40, Stage: lifecycle.StageNone,
		LastOp:     lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateSuccessful, Desc: lastop.DescRejoined},
		ProviderID: "aws:///eu-west-1/i-1", NodeName: "node-1"}, m, adoptedAt)

	// MCM takes over again and starts deleting the machine.
	m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: v1alpha1.MachineTerminating, LastUpdateTime: metav1.NewTime(adoptedAt)}
	m.Status.LastOperation = v1alpha1.LastOperation{Description: "Initiate node drain", State: "Processing", Type: "Delete"}

	st, err := StatusFrom(viaJSON(t, m))
	require.NoError(t, err)
	require.Equal(t, lifecycle.Status{
		Phase: phase.Terminating, Attempt: 3, PhaseSince: lifecycle.StampOf(adoptedAt),
		LastOp:     lastop.Operation{Type: lastop.TypeDelete, State: lastop.StateProcessing, Desc: lastop.DescInitiateDrain},
		ProviderID: "aws:///eu-west-1/i-1", NodeName: "node-1",
	}, st)
}

// fakeDriver deletes instances.
type fakeDriver struct {
	driverapi.UnimplementedDriver
	deleted []string
}

func (f *fakeDriver) DeleteMachine(_ context.Context, req *driverapi.DeleteMachineRequest) (*driverapi.DeleteMachineResponse, error) {
	f.deleted = append(f.deleted, req.Machine.ProviderID)
	return &driverapi.DeleteMachineResponse{}, nil
}

// cluster is the least a shell needs to carry out deletions against MCM's
// objects: the machine as the API server returns it, its node, a driver.
type cluster struct {
	t       *testing.T
	machine *v1alpha1.Machine // nil once deleted
	node    *corev1.Node      // nil once deleted
	driver  *fakeDriver
}

func (c *cluster) apply(e lifecycle.Effect) lifecycle.Write {
	switch e.Kind {
	case lifecycle.KindSetNodeCondition, lifecycle.KindCordon, lifecycle.KindDrain, lifecycle.KindEvent:
		// The node accepts them; this node runs no pods.
		if e.Kind == lifecycle.KindCordon && c.node != nil {
			c.node.Spec.Unschedulable = true
		}
	case lifecycle.KindRemoveNodeFinalizer:
		if c.node != nil {
			c.node.Finalizers = slices.DeleteFunc(c.node.Finalizers, func(f string) bool { return f == e.Key })
		}
	case lifecycle.KindDeleteNode:
		if c.node == nil {
			return lifecycle.WriteNotFound
		}
		require.Empty(c.t, c.node.Finalizers, "the node's finalizer goes first")
		c.node = nil
	case lifecycle.KindRemoveFinalizer:
		c.machine.Finalizers = slices.DeleteFunc(c.machine.Finalizers, func(f string) bool { return f == lifecycle.Finalizer })
		if c.machine.DeletionTimestamp != nil && len(c.machine.Finalizers) == 0 {
			c.machine = nil // the API server deletes it
		}
	default:
		c.t.Fatalf("unexpected effect %s", e)
	}
	return lifecycle.WriteOK
}

// pass runs one reconcile pass with pass.Run over the cluster
// (clusterShell), persisting every status with ApplyStatus and reading it
// back with StatusFrom through JSON, as a shell against the API server
// does. The pass must end: the machine gone or a decision done. It returns
// the pass's decisions.
func (c *cluster) pass(now time.Time) []lifecycle.Decision {
	cfg, err := lifecycle.DefaultConfig().Check()
	require.NoError(c.t, err)
	sh := &clusterShell{c: c, now: now}
	var s pass.Scratch
	r := pass.Run(context.Background(), &cfg, sh, now, &s, sh)
	if r.End != pass.EndDone && r.End != pass.EndGone {
		c.t.Fatalf("the pass ended %s after %d steps: %v", r.End, r.Steps, sh.descs)
	}
	return sh.ds
}

// clusterShell is a cluster as the pass.Shell of one pass at now, and its
// Observer, which records every decision.
type clusterShell struct {
	c     *cluster
	now   time.Time
	ds    []lifecycle.Decision
	descs []string // the descriptions of the statuses saved
}

func (s *clusterShell) Observe(_ context.Context, now time.Time, in *lifecycle.Input) error {
	c := s.c
	*in = lifecycle.Input{Now: now, Object: ObjectFrom(c.machine), Node: NodeFrom(c.node)}
	if c.machine != nil {
		st, err := StatusFrom(c.machine)
		require.NoError(c.t, err)
		in.Status = st
	}
	return nil
}

func (s *clusterShell) Decided(_ *lifecycle.Input, d *lifecycle.Decision) { s.ds = append(s.ds, *d) }

func (s *clusterShell) Save(_ context.Context, st *lifecycle.Status) lifecycle.Write {
	c := s.c
	ApplyStatus(*st, c.machine, s.now)
	c.machine = viaJSON(c.t, c.machine)
	s.descs = append(s.descs, c.machine.Status.LastOperation.Description)
	back, err := StatusFrom(c.machine)
	require.NoError(c.t, err)
	require.Equal(c.t, *st, back, "the persisted status reads back exactly")
	require.NotContains(c.t, c.machine.Annotations[StateAnnotation], `"op"`, "MCM's text says it all")
	return lifecycle.WriteOK
}

func (s *clusterShell) Apply(_ context.Context, e *lifecycle.Effect) (lifecycle.Write, string) {
	if w := s.c.apply(*e); w != lifecycle.WriteOK {
		return w, w.String()
	}
	return lifecycle.WriteOK, ""
}

func (s *clusterShell) Invoke(ctx context.Context, c *driverapi.Call, res *driverapi.Result) {
	*res = driverapi.Invoke(ctx, s.c.driver, *c, driverapi.Class{})
}

func (s *clusterShell) Node(context.Context, string) lifecycle.Node { return lifecycle.Node{} }

func rules(ds []lifecycle.Decision) []lifecycle.Rule {
	out := make([]lifecycle.Rule, len(ds))
	for i := range ds {
		out[i] = ds[i].Rule
	}
	return out
}

// TestEndToEndAdoptMidDeletion adopts a machine MCM left right after it
// deleted the VM, and drives it to the end: the lifecycle goes on with the
// node (never asking the provider again), then the finalizer, and writes
// MCM's own descriptions on the way.
func TestEndToEndAdoptMidDeletion(t *testing.T) {
	c := &cluster{t: t, driver: &fakeDriver{}, node: readyNode(),
		machine: mcmMachine(v1alpha1.MachineTerminating, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateProcessing, "",
			"VM deletion was successful. Initiate node object deletion")}

	first := c.machine.DeepCopy()
	ds := c.pass(adoptedAt)

	require.Equal(t, lifecycle.RuleDeleteAdopted, ds[0].Rule)
	require.Equal(t, lifecycle.StageDeleteNode, ds[0].Status.Stage)
	require.Equal(t, []lifecycle.Kind{lifecycle.KindRemoveNodeFinalizer, lifecycle.KindDeleteNode}, kinds(&ds[0]))
	require.Equal(t, []lifecycle.Rule{
		lifecycle.RuleDeleteAdopted, lifecycle.RuleDeleteNodeDeleted, lifecycle.RuleNoMachine,
	}, rules(ds))
	require.Equal(t, `Deletion of Node Object "node-1" is successful. Initiate machine object finalizer removal`,
		lifecycle.Describe(&ds[1].Status, first.Name), "MCM's S5e text, byte for byte")
	require.Nil(t, c.node, "the node is deleted")
	require.Nil(t, c.machine, "the finalizer is removed and the machine is gone")
	require.Empty(t, c.driver.deleted, "the VM was deleted already; the provider is not asked again")
}

// TestEndToEndAdoptBeforeDrain adopts a machine MCM was about to drain and
// drives its whole deletion.
func TestEndToEndAdoptBeforeDrain(t *testing.T) {
	c := &cluster{t: t, driver: &fakeDriver{}, node: readyNode(),
		machine: mcmMachine(v1alpha1.MachineTerminating, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateProcessing, "",
			"Initiate node drain")}
	ds := c.pass(adoptedAt)
	require.Equal(t, []lifecycle.Rule{
		lifecycle.RuleDeleteAdopted, lifecycle.RuleDeleteDrained, lifecycle.RuleDeleteVMDeleted,
		lifecycle.RuleDeleteNodeDeleted, lifecycle.RuleNoMachine,
	}, rules(ds))
	require.Equal(t, []string{"aws:///eu-west-1/i-1"}, c.driver.deleted)
	require.Nil(t, c.node)
	require.Nil(t, c.machine)
}
