package lifecycle_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// Tests of the creation flow (create.go). This file: MCM's creation and
// initialization rows (A1-A10, B1-B9 in doc/mcm-rows.md) and what a creation
// records. Its deviations from MCM: create_deviations_test.go; machines found
// in the middle of their creation: create_adopt_test.go.

const (
	cloudMsg = "Cloud provider message - machine codes error: code = "
	creating = "Creating machine on cloud provider"
)

func clbo(code, desc string) op { return op{lastop.TypeCreate, lastop.StateFailed, code, desc} }

var pendingOp = op{lastop.TypeCreate, lastop.StateProcessing, "", creating}

// identityEffects are the object writes that record a new instance (B2).
// instanceCreated is the event of a CreateMachine that succeeded.
const instanceCreated = "event Normal InstanceCreated (create.created)"

var identityEffects = []string{
	"ensure-node-label " + nodeName,
	"ensure-priority " + lifecycle.DefaultPriority,
	"ensure-provider-id " + providerID,
}

// TestCreationRowsPhaseA has one case per row of MCM's creation flow, phase A
// (A1-A10 in doc/mcm-rows.md): the lookup, the creation and their outcomes.
func TestCreationRowsPhaseA(t *testing.T) {
	fresh := newInput
	runRows(t, []rowCase{
		{
			name:    "A1 lookup error undecodable: Medium, no writes",
			in:      fresh,
			results: []driverapi.Result{undecodable("dial tcp: connection refused")},
			want:    want{rule: lifecycle.RuleCreateLookupUndecodable, period: retry.Medium},
		},
		{
			name:    "A2 NotFound, CreateMachine ResourceExhausted: CrashLoopBackOff, resource-exhausted period (Long)",
			in:      fresh,
			results: []driverapi.Result{notFound, fail(driverapi.ResourceExhausted, "quota exceeded")},
			want: want{rule: lifecycle.RuleCreateResourceExhausted, phase: phase.CrashLoopBackOff, period: retry.Long, changed: true,
				op:      clbo("ResourceExhausted", cloudMsg+"[ResourceExhausted] message = [quota exceeded]"),
				effects: []string{"event Warning CreateFailed (create.resource-exhausted)"}},
		},
		{
			name:    "A2 ResourceExhausted period is configurable",
			cfg:     func(c *lifecycle.Config) { c.Retry.ResourceExhausted = 90 * time.Second },
			in:      fresh,
			results: []driverapi.Result{notFound, fail(driverapi.ResourceExhausted, "quota exceeded")},
			want: want{rule: lifecycle.RuleCreateResourceExhausted, phase: phase.CrashLoopBackOff, period: 90 * time.Second, changed: true,
				op:      clbo("ResourceExhausted", cloudMsg+"[ResourceExhausted] message = [quota exceeded]"),
				effects: []string{"event Warning CreateFailed (create.resource-exhausted)"}},
		},
		{
			name:    "A2 Unimplemented lookup also creates; past the creation timeout the failure is Failed",
			in:      func() lifecycle.Input { in := fresh(); in.Now = t0.Add(21 * time.Minute); return in },
			results: nil,
			want: want{rule: lifecycle.RuleCreateTimeout, phase: phase.Failed, period: retry.Long, changed: true,
				op:      op{lastop.TypeCreate, lastop.StateFailed, "", "Machine machine-1 failed to be created in 20m0s; creation timeout exceeded."},
				effects: []string{"event Warning MachineFailed (create.timeout)"}},
		},
		{
			name:    "A3 CreateMachine transient code: CrashLoopBackOff, Short",
			in:      fresh,
			results: []driverapi.Result{unimplemented, fail(driverapi.Unavailable, "api busy")},
			want: want{rule: lifecycle.RuleCreateTransient, phase: phase.CrashLoopBackOff, period: retry.Short, changed: true,
				op:      clbo("Unavailable", cloudMsg+"[Unavailable] message = [api busy]"),
				effects: []string{"event Warning CreateFailed (create.transient-error)"}},
		},
		{
			name:    "A4 CreateMachine other code: CrashLoopBackOff, Medium",
			in:      fresh,
			results: []driverapi.Result{notFound, fail(driverapi.InvalidArgument, "bad image")},
			want: want{rule: lifecycle.RuleCreateFailed, phase: phase.CrashLoopBackOff, period: retry.Medium, changed: true,
				op:      clbo("InvalidArgument", cloudMsg+"[InvalidArgument] message = [bad image]"),
				effects: []string{"event Warning CreateFailed (create.failed)"}},
		},
		{
			name:    "A4 CreateMachine undecodable: code Unknown, Medium",
			in:      fresh,
			results: []driverapi.Result{notFound, undecodable("oops [1] and [2]")},
			want: want{rule: lifecycle.RuleCreateFailed, phase: phase.CrashLoopBackOff, period: retry.Medium, changed: true,
				op:      clbo("Unknown", "Cloud provider message - oops [1] and [2]"),
				effects: []string{"event Warning CreateFailed (create.failed)"}},
		},
		{
			name: "A4 LastKnownState is kept on an error path (deviation: MCM clears it)",
			in: func() lifecycle.Input {
				in := fresh()
				in.Status.LastKnownState = "nic-7 reserved"
				return in
			},
			results: []driverapi.Result{notFound, fail(driverapi.Internal, "boom")},
			want: want{rule: lifecycle.RuleCreateFailed, phase: phase.CrashLoopBackOff, period: retry.Medium, changed: true,
				op:      clbo("Internal", cloudMsg+"[Internal] message = [boom]"),
				effects: []string{"event Warning CreateFailed (create.failed)"}},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, "nic-7 reserved", d.Status.LastKnownState)
			},
		},
		{
			name:    "A5 created on a stale node (another providerID): Failed, instance deleted",
			in:      fresh,
			created: lifecycle.Node{Name: "old-node", ProviderID: "fake:///eu-1/vm-0"},
			results: []driverapi.Result{notFound, ok(providerID, "old-node")},
			want: want{rule: lifecycle.RuleCreateStaleNode, phase: phase.Failed, period: retry.Short, changed: true,
				op: op{lastop.TypeCreate, lastop.StateFailed, "", "VM using old node obj"},
				effects: []string{"event Warning StaleNode (create.stale-node)",
					"call DeleteMachine machine-1 providerID=fake:///eu-1/vm-1 uid=uid-1"}},
		},
		{
			name:    "A5 not stale when the node carries the created providerID (deviation: providerIDs are compared)",
			in:      fresh,
			created: lifecycle.Node{Name: nodeName, ProviderID: providerID},
			results: []driverapi.Result{notFound, ok(providerID, nodeName)},
			want: want{rule: lifecycle.RuleCreateCreated, period: retry.Short, changed: true,
				effects: append(append([]string{instanceCreated}, identityEffects...), initCall)},
		},
		{
			name:    "A6 created: instance recorded, object written, InitializeMachine asked",
			in:      fresh,
			results: []driverapi.Result{notFound, ok(providerID, nodeName)},
			want: want{rule: lifecycle.RuleCreateCreated, period: retry.Short, changed: true,
				effects: append(append([]string{instanceCreated}, identityEffects...), initCall)},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, lifecycle.StageInitializing, d.Status.Stage)
				require.Equal(t, providerID, d.Status.ProviderID)
				require.Equal(t, nodeName, d.Status.NodeName)
			},
		},
		{
			name: "A7 NotFound with a providerID recorded: go on with it (Pending)",
			in: func() lifecycle.Input {
				in := fresh()
				in.Object.ProviderID = providerID
				in.Object.NodeLabel = nodeName
				return in
			},
			results: []driverapi.Result{notFound},
			want: want{rule: lifecycle.RuleCreateRecorded, phase: phase.Pending, period: retry.Short, changed: true,
				op:      pendingOp,
				effects: []string{"ensure-priority 3", "event Normal InstanceReady (create.pending)"}},
		},
		{
			name: "A8 Uninitialized: InitializeMachine asked for the instance the lookup returned",
			in:   fresh,
			results: []driverapi.Result{func() driverapi.Result {
				r := fail(driverapi.Uninitialized, "not yet")
				r.ProviderID, r.NodeName = providerID, nodeName
				return r
			}()},
			want: want{rule: lifecycle.RuleCreateUninitialized, period: retry.Short, changed: true,
				effects: append(append([]string{}, identityEffects...), initCall)},
		},
		{
			name:    "A9 lookup fails with a decodable code: CrashLoopBackOff by the code's class",
			in:      fresh,
			results: []driverapi.Result{fail(driverapi.Unavailable, "cloud down")},
			want: want{rule: lifecycle.RuleCreateLookupFailed, phase: phase.CrashLoopBackOff, period: retry.Short, changed: true,
				op:      clbo("Unavailable", cloudMsg+"[Unavailable] message = [cloud down]"),
				effects: []string{"event Warning CreateFailed (create.lookup-failed)"}},
		},
		{
			name:    "A9 lookup fails with OutOfRange: Medium",
			in:      fresh,
			results: []driverapi.Result{fail(driverapi.OutOfRange, "region gone")},
			want: want{rule: lifecycle.RuleCreateLookupFailed, phase: phase.CrashLoopBackOff, period: retry.Medium, changed: true,
				op:      clbo("OutOfRange", cloudMsg+"[OutOfRange] message = [region gone]"),
				effects: []string{"event Warning CreateFailed (create.lookup-failed)"}},
		},
		{
			name:    "A10 lookup OK: adopt the instance (recorded, Pending)",
			in:      fresh,
			results: []driverapi.Result{ok(providerID, nodeName)},
			want: want{rule: lifecycle.RuleCreateAdopted, phase: phase.Pending, period: retry.Short, changed: true,
				op:      pendingOp,
				effects: append(append([]string{}, identityEffects...), "event Normal InstanceReady (create.pending)")},
		},
	})
}

// TestCreationRowsPhaseB has one case per row of MCM's creation flow, phase B
// (B1-B9 in doc/mcm-rows.md), with MCM's initialization contract.
func TestCreationRowsPhaseB(t *testing.T) {
	fresh := newInput
	created := []driverapi.Result{notFound, ok(providerID, nodeName)}
	afterCreate := func(rs ...driverapi.Result) []driverapi.Result {
		return append(append([]driverapi.Result{}, created...), rs...)
	}
	runRows(t, []rowCase{
		{
			name:    "B1 CreateMachine OK without providerID: nothing recorded, Medium (the intent stays)",
			in:      fresh,
			results: []driverapi.Result{notFound, ok("", nodeName)},
			want:    want{rule: lifecycle.RuleCreateEmptyIdentity, period: retry.Medium},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.True(t, d.Anomalies.Has(lifecycle.AnomalyEmptyIdentity))
				require.Equal(t, lifecycle.StageCreating, d.Status.Stage, "the creation intent is kept")
				require.Empty(t, d.Status.ProviderID)
			},
		},
		{
			name:    "B1 lookup OK without node name while a target cluster is used",
			in:      fresh,
			results: []driverapi.Result{ok(providerID, "")},
			want:    want{rule: lifecycle.RuleCreateEmptyIdentity, period: retry.Medium},
		},
		{
			name: "B2 node label overwritten, priority and providerID written before initialization",
			in: func() lifecycle.Input {
				in := fresh()
				in.Object.NodeLabel = "some-other-node"
				return in
			},
			results: created,
			want: want{rule: lifecycle.RuleCreateCreated, period: retry.Short, changed: true,
				effects: append(append([]string{instanceCreated}, identityEffects...), initCall)},
		},
		{
			name:    "B3 InitializeMachine Unimplemented: nothing to initialize, Pending",
			in:      fresh,
			results: afterCreate(fail(driverapi.Unimplemented, "no init")),
			want: want{rule: lifecycle.RuleCreateInitUnimplemented, phase: phase.Pending, period: retry.Short, changed: true,
				op: pendingOp, effects: []string{"event Normal InstanceReady (create.pending)"}},
		},
		{
			name:    "B4 InitializeMachine undecodable: Long, no status write",
			in:      fresh,
			results: afterCreate(undecodable("EOF")),
			want:    want{rule: lifecycle.RuleCreateInitUndecodable, period: retry.Long},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, lifecycle.StageInitializing, d.Status.Stage)
			},
		},
		{
			name: "B5 InitializeMachine fails: CrashLoopBackOff with the initialization stage, Short",
			in:   fresh,
			results: []driverapi.Result{notFound, withState(ok(providerID, nodeName), "created vm-1"),
				fail(driverapi.Internal, "source/dest check")},
			want: want{rule: lifecycle.RuleCreateInitFailed, phase: phase.CrashLoopBackOff, period: retry.Short, changed: true,
				op:      clbo("Internal", "Provider error: machine codes error: code = [Internal] message = [source/dest check]. Initialize VM Instance"),
				effects: []string{"event Warning InitializeFailed (create.init-failed)"}},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, lastop.StepInitialize, d.Status.LastOp.Desc.Step())
				require.Equal(t, lifecycle.StageInitializing, d.Status.Stage, "initialization is retried")
				require.Equal(t, "created vm-1", d.Status.LastKnownState, "the state CreateMachine answered is kept (deviation: MCM writes none)")
			},
		},
		{
			name:    "B5 InitializeMachine NotFound is a failure too, as MCM's code does",
			in:      fresh,
			results: afterCreate(fail(driverapi.NotFound, "vm vanished")),
			want: want{rule: lifecycle.RuleCreateInitFailed, phase: phase.CrashLoopBackOff, period: retry.Short, changed: true,
				op:      clbo("NotFound", "Provider error: machine codes error: code = [NotFound] message = [vm vanished]. Initialize VM Instance"),
				effects: []string{"event Warning InitializeFailed (create.init-failed)"}},
		},
		{
			name:    "B6 no target cluster: Available with the addresses",
			cfg:     func(c *lifecycle.Config) { c.NoTargetCluster = true },
			in:      fresh,
			results: []driverapi.Result{notFound, withAddr(ok(providerID, "")), {}},
			want: want{rule: lifecycle.RuleCreateAvailable, phase: phase.Available, period: retry.Long, changed: true,
				op:      op{lastop.TypeCreate, lastop.StateSuccessful, "", "Created machine on cloud provider"},
				effects: []string{"event Normal MachineAvailable (create.available)"}},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, []driverapi.Address{{Type: "InternalIP", Address: "10.0.0.7"}}, d.Status.Addresses)
			},
		},
		{
			name: "B7 an object write before initialization fails: Short, nothing advances",
			in: func() lifecycle.Input {
				return writeFailed(lifecycle.DefaultConfig(), fresh(), lifecycle.WriteFailed, notFound, ok(providerID, nodeName))
			},
			want: want{rule: lifecycle.RuleWriteFailed, period: retry.Short},
			check: func(t *testing.T, in lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, lifecycle.StageInitializing, d.Status.Stage, "the recorded instance is kept")
			},
		},
		{
			name: "B7 the same write meets a conflict: the conflict period",
			in: func() lifecycle.Input {
				return writeFailed(lifecycle.DefaultConfig(), fresh(), lifecycle.WriteConflict, notFound, ok(providerID, nodeName))
			},
			want: want{rule: lifecycle.RuleWriteConflict, period: retry.Conflict},
		},
		{
			name:    "B8 initialized: Pending, Create Processing",
			in:      fresh,
			results: afterCreate(driverapi.Result{}),
			want: want{rule: lifecycle.RuleCreatePending, phase: phase.Pending, period: retry.Short, changed: true,
				op: pendingOp, effects: []string{"event Normal InstanceReady (create.pending)"}},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, lifecycle.StageNone, d.Status.Stage)
				require.Equal(t, lifecycle.WaitNodeJoin, d.Wait.For)
				require.Equal(t, lifecycle.StampOf(t0.Add(20*time.Minute)), d.Wait.Until)
			},
		},
		{
			name: "B9 phase past creation: identity recorded, Long",
			in: func() lifecycle.Input {
				in := withIdentity(fresh(), phase.Running)
				in.Status.ProviderID, in.Object.ProviderID = "", ""
				in.Node = healthyNode()
				in.Node.ProviderID = "" // nothing names the instance: the provider is asked
				in.Status.Conditions = in.Node.Conditions
				return in
			},
			results: []driverapi.Result{ok(providerID, nodeName)},
			want: want{rule: lifecycle.RuleCreateAdopted, phase: phase.Running, period: retry.Long, changed: true,
				effects: []string{"ensure-provider-id " + providerID}},
		},
	})
}

// writeFailed plays results from in, then reports that the first effect of
// the last decision failed with w.
func writeFailed(cfg lifecycle.Config, in lifecycle.Input, w lifecycle.Write, results ...driverapi.Result) lifecycle.Input {
	d := lifecycle.Step(cfg, in)
	for _, r := range results {
		in = then(in, d, r)
		d = lifecycle.Step(cfg, in)
	}
	in.Status = d.Status
	in.Outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: 0, Stopped: w}
	return in
}

func withAddr(r driverapi.Result) driverapi.Result {
	r.Addresses = []driverapi.Address{{Type: "InternalIP", Address: "10.0.0.7"}}
	return r
}

// Without a target cluster the addresses of CreateMachine and
// InitializeMachine are merged as MCM does: deduplicated, with the node
// name as Hostname, sorted by type and address.
func TestAddressesMergedWithoutTargetCluster(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	cfg.NoTargetCluster = true
	in := newInput()
	created := ok(providerID, nodeName)
	created.Addresses = []driverapi.Address{{Type: "InternalIP", Address: "10.0.0.7"}}
	initialized := driverapi.Result{Addresses: []driverapi.Address{{Type: "ExternalIP", Address: "1.2.3.4"},
		{Type: "InternalIP", Address: "10.0.0.7"}}}
	ds := run(t, cfg, in, notFound, created, initialized)
	require.Equal(t, []driverapi.Address{{Type: "ExternalIP", Address: "1.2.3.4"},
		{Type: "Hostname", Address: nodeName}, {Type: "InternalIP", Address: "10.0.0.7"}}, ds[3].Status.Addresses)
	require.Equal(t, phase.Available, ds[3].Status.Phase)
}

// New instances are created at the desired generation, with the desired
// metadata, and record that generation as applied.
func TestCreatedAtTheDesiredGeneration(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := newInput()
	in.Object.UpdateGeneration = 5
	in.Object.Metadata = map[string]string{"team": "a"}
	ds := run(t, cfg, in, notFound)
	require.Equal(t, "call CreateMachine machine-1 uid=uid-1 key=uid-1/0 generation=5 set team=a", ds[1].Lines()[1])
	require.Equal(t, int64(5), ds[1].Status.AppliedGeneration)
	// A retry on the same key asks the generation of the intent, even when
	// the spec moved meanwhile (an idempotent provider answers with the
	// first instance; the hot update follows once it runs).
	retryIn := in
	retryIn.Status = ds[1].Status
	retryIn.Object.UpdateGeneration = 6
	ds2 := run(t, cfg, retryIn, notFound)
	require.Equal(t, driverapi.MethodCreate, ds2[1].Call.Method)
	require.Equal(t, int64(5), ds2[1].Call.Generation)
	require.Equal(t, int64(5), ds2[1].Status.AppliedGeneration)
}

// withState is r answering the provider's opaque state lks.
func withState(r driverapi.Result, lks string) driverapi.Result {
	r.LastKnownState = lks
	return r
}
