package lifecycle_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/lifecycle/pass"
	"github.com/purelifecycle/machine/phase"
)

// The fixtures every table test starts from.
var t0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

const (
	machineName = "machine-1"
	machineUID  = "uid-1"
	providerID  = "fake:///eu-1/vm-1"
	nodeName    = "node-vm-1"
)

// newInput is a machine one minute old, with its finalizer, nothing
// created yet.
func newInput() lifecycle.Input {
	return lifecycle.Input{
		Now: t0.Add(time.Minute),
		Object: lifecycle.Object{
			Name:         machineName,
			UID:          machineUID,
			Owner:        "machineset-1",
			CreationTime: t0,
			Finalizer:    true,
		},
	}
}

// withIdentity returns in as a machine whose instance is recorded and
// reflected on the object, in phase p.
func withIdentity(in lifecycle.Input, p phase.Phase) lifecycle.Input {
	in.Status.Phase = p
	in.Status.PhaseSince = lifecycle.StampOf(t0)
	in.Status.ProviderID = providerID
	in.Status.NodeName = nodeName
	in.Object.ProviderID = providerID
	in.Object.NodeLabel = nodeName
	in.Object.Priority = lifecycle.DefaultPriority
	return in
}

// healthyNode is the machine's node, joined and healthy.
func healthyNode() lifecycle.Node {
	return lifecycle.Node{
		Name:        nodeName,
		ProviderID:  providerID,
		MachineName: machineName,
		Conditions: []lifecycle.Condition{
			{Type: "Ready", Status: lifecycle.ConditionTrue, Since: lifecycle.StampOf(t0.Add(2 * time.Minute))},
			{Type: "DiskPressure", Status: lifecycle.ConditionFalse},
		},
	}
}

// step calls Step and checks the promises that hold for every decision:
// the input is unchanged, the decision is deterministic, a driver call is
// the last effect and the only one, every phase change is declared, and a
// pass ends with a positive requeue unless the machine is gone.
func step(t *testing.T, cfg lifecycle.Config, in lifecycle.Input) lifecycle.Decision {
	t.Helper()
	before := deepCopy(in)
	d := lifecycle.Step(cfg, in)
	require.True(t, reflect.DeepEqual(before, in), "Step changed its input")
	again := lifecycle.Step(cfg, before)
	require.True(t, reflect.DeepEqual(d, again), "Step is not deterministic")
	checkDecision(t, in, d)
	return d
}

// checker is what checkDecision reports to: a *testing.T, or a recorder.
type checker interface {
	require.TestingT
	Helper()
}

func checkDecision(t checker, in lifecycle.Input, d lifecycle.Decision) {
	t.Helper()
	calls := 0
	for i, e := range d.Effects.Slice() {
		require.True(t, e.Kind.Valid(), "kind %v", e.Kind)
		if e.Kind == lifecycle.KindCallDriver {
			calls++
			require.Equal(t, d.Effects.Len()-1, i, "the driver call must be the last effect")
			require.NotEqual(t, driverapi.MethodNone, d.Call.Method)
		}
	}
	require.LessOrEqual(t, calls, 1)
	if calls == 0 {
		require.Equal(t, driverapi.MethodNone, d.Call.Method, "a call without its effect")
	}
	require.True(t, phase.Allowed(in.Status.Phase, d.Status.Phase),
		"undeclared phase change %s -> %s", in.Status.Phase.Label(), d.Status.Phase.Label())
	require.False(t, d.Anomalies.Has(lifecycle.AnomalyUndeclaredTransition), "a flow asked for an undeclared phase change")
	if d.Rule != lifecycle.RuleNoMachine && d.Rule != lifecycle.RuleDeleteDone {
		require.Positive(t, d.Requeue, "every pass ends with a positive requeue")
	}
	require.True(t, d.Rule.Valid(), "rule %v", d.Rule)
	require.Equal(t, d.Changed, d.Status.Seq != in.Status.Seq, "Seq moves exactly with a change")
	if d.Effects.Len() > 0 {
		require.Equal(t, d.Status.Seq, d.OpID.Seq())
		require.True(t, d.OpID.Rule().Valid(), "op rule")
		require.Equal(t, d.Effects.Len(), d.OpID.Effects())
	} else {
		require.Zero(t, d.OpID)
	}
	// Safety promises that a single decision shows (see lifecycletest.Check).
	if d.Call.Method == driverapi.MethodCreate {
		require.Empty(t, in.Status.ProviderID, "CreateMachine with an instance recorded")
		require.True(t, in.Object.DeletionTime.IsZero(), "CreateMachine while deleting")
	}
	if d.Status.Phase == phase.Running && d.Status.Phase != in.Status.Phase {
		require.True(t, in.Node.Found(), "Running without a node")
		require.True(t, in.Node.ProviderID == "" || in.Node.ProviderID == d.Status.ProviderID, "Running on another instance's node")
		require.NotEmpty(t, d.Status.ProviderID, "Running without a recorded instance")
		ready := false
		for _, c := range in.Node.Conditions {
			if c.Type == "Ready" {
				ready = c.Status == lifecycle.ConditionTrue
			}
		}
		require.True(t, ready, "Running without a Ready node")
	}
}

// deepCopy copies an Input including the slices, maps and outcome it
// points to, so a later comparison sees any write through them.
func deepCopy(in lifecycle.Input) lifecycle.Input {
	out := in
	out.Node.Conditions = cloneConds(in.Node.Conditions)
	out.Status.Conditions = cloneConds(in.Status.Conditions)
	out.Status.Addresses = cloneAddrs(in.Status.Addresses)
	out.Object.Overrides.NodeConditions = cloneStrings(in.Object.Overrides.NodeConditions)
	if in.Outcome != nil {
		o := *in.Outcome
		o.Result.Addresses = cloneAddrs(o.Result.Addresses)
		out.Outcome = &o
	}
	return out
}

func cloneConds(c []lifecycle.Condition) []lifecycle.Condition {
	if c == nil {
		return nil
	}
	return append([]lifecycle.Condition{}, c...)
}

func cloneAddrs(a []driverapi.Address) []driverapi.Address {
	if a == nil {
		return nil
	}
	return append([]driverapi.Address(nil), a...)
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}

// then builds the input of the step after d, when all of d's effects ran
// and its driver call, if any, returned r.
func then(in lifecycle.Input, d lifecycle.Decision, r driverapi.Result) lifecycle.Input {
	in.Status = d.Status
	if d.HasCall() {
		r.Method = d.Call.Method
	}
	in.Outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: d.Effects.Len(), Result: r}
	applyObjectEffects(&in.Object, d)
	return in
}

// thenCreated is then with the node created when the result is a
// CreateMachine's that names it.
func thenCreated(in lifecycle.Input, d lifecycle.Decision, r driverapi.Result, created lifecycle.Node) lifecycle.Input {
	in = then(in, d, r)
	if o := in.Outcome; o.Result.Method == driverapi.MethodCreate && created.Found() && created.Name == o.Result.NodeName {
		o.CreatedNode = created
	}
	return in
}

// playPass plays one reconcile pass of *in with pass.Run (inputPass),
// until a decision is done, MaxStepsPerPass steps were made, or stop (when
// not nil) reports true of a decision. A driver call is answered by
// answer; when failWrites, the last write of an op without a call fails.
// Every decision is checked as step checks it, and made from the world as
// observed. It returns the pass's requeue and whether stop ended the pass;
// the decision stop ended it at is not carried into *in.
func playPass(t *testing.T, cfg lifecycle.Config, in *lifecycle.Input, answer func(driverapi.Call) driverapi.Result,
	failWrites bool, stop func(lifecycle.Decision) bool) (time.Duration, bool) {
	t.Helper()
	p := inputPass{answer: answer, failWrites: failWrites}
	p.decided = func(seen *lifecycle.Input, d *lifecycle.Decision) bool {
		t.Helper()
		world := deepCopy(*in)
		world.Outcome = seen.Outcome
		require.True(t, reflect.DeepEqual(world, *seen), "a step decided from an input that is not the world's")
		require.Equal(t, *d, step(t, cfg, deepCopy(*seen)), "StepInto and Step decide differently")
		return stop != nil && stop(*d)
	}
	r, stopped := p.run(t, cfg, in)
	return r.Requeue, stopped
}

// inputPass is a reconcile pass, run with pass.Run, over a world that is
// one Input: a save persists its status, and the object ensure-effects
// write its object (lifecycletest.ApplyToObject); other effects touch
// nothing, and the node and the rest of the input stay as they are. The
// pass leaves the input without an outcome, as the next pass starts from.
type inputPass struct {
	// answer answers the driver calls; the result's Method is the call's.
	answer func(driverapi.Call) driverapi.Result
	// decided, when set, sees every decision with the input it was made
	// from, before any of it is carried out; returning true ends the pass
	// there, and nothing more of it reaches the input.
	decided func(in *lifecycle.Input, d *lifecycle.Decision) (stop bool)
	// failWrites makes the last write of an op without a driver call fail.
	failWrites bool
	// crash, when set, is asked after every effect carried out, with the
	// decision and how many of its effects were; true: the controller dies
	// there, and nothing more reaches the input.
	crash func(d *lifecycle.Decision, ran int) bool
}

// fataler is what a pass reports a broken setup to: a *testing.T or a
// *rapid.T.
type fataler interface {
	Fatalf(format string, args ...any)
}

// run runs one pass of in at in.Now and says whether decided ended it.
func (p inputPass) run(t fataler, cfg lifecycle.Config, in *lifecycle.Input) (pass.Report, bool) {
	checked, err := cfg.Check()
	if err != nil {
		t.Fatalf("%v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in.Outcome = nil
	sh := &inputShell{inputPass: p, in: in, cancel: cancel}
	var s pass.Scratch
	r := pass.Run(ctx, &checked, sh, in.Now, &s, sh)
	in.Outcome = nil
	return r, sh.stopped
}

// inputShell is an inputPass's world as a pass.Shell, and the pass's
// Observer.
type inputShell struct {
	inputPass
	in     *lifecycle.Input
	cancel context.CancelFunc

	d       *lifecycle.Decision // the decision being carried out
	ran     int                 // its effects carried out
	stopped bool                // decided ended the pass, or it crashed: nothing more reaches in
}

// errStopped ends a pass that was stopped or crashed.
var errStopped = errors.New("the pass was stopped")

func (s *inputShell) Observe(_ context.Context, _ time.Time, in *lifecycle.Input) error {
	if s.stopped {
		return errStopped
	}
	*in = *s.in
	in.Outcome = nil
	return nil
}

func (s *inputShell) Decided(in *lifecycle.Input, d *lifecycle.Decision) {
	if s.stopped {
		return
	}
	s.d, s.ran = d, 0
	if s.decided != nil && s.decided(in, d) {
		s.end()
	}
}

// end ends the pass: nothing more reaches the input.
func (s *inputShell) end() {
	s.stopped = true
	s.cancel()
}

func (s *inputShell) Save(_ context.Context, st *lifecycle.Status) lifecycle.Write {
	if s.stopped {
		return lifecycle.WriteFailed
	}
	s.in.Status = *st
	return lifecycle.WriteOK
}

func (s *inputShell) Apply(_ context.Context, e *lifecycle.Effect) (lifecycle.Write, string) {
	if s.stopped {
		return lifecycle.WriteFailed, errStopped.Error()
	}
	s.ran++
	if s.failWrites && !s.d.HasCall() && s.ran == s.d.Effects.Len() {
		return lifecycle.WriteFailed, "pod disruption budget"
	}
	lifecycletest.ApplyToObject(&s.in.Object, e)
	s.carriedOut()
	return lifecycle.WriteOK, ""
}

func (s *inputShell) Invoke(_ context.Context, c *driverapi.Call, res *driverapi.Result) {
	if s.stopped {
		*res = driverapi.ResultOf(c.Method, errStopped)
		return
	}
	*res = s.answer(*c)
	res.Method = c.Method
	s.ran++
	s.carriedOut()
}

// carriedOut follows an effect carried out: the controller may die there.
func (s *inputShell) carriedOut() {
	if s.crash != nil && s.crash(s.d, s.ran) {
		s.end()
	}
}

func (s *inputShell) Node(context.Context, string) lifecycle.Node { return lifecycle.Node{} }

// applyObjectEffects plays the object ensure-effects onto the object, as
// the shell's own write would return it.
func applyObjectEffects(o *lifecycle.Object, d lifecycle.Decision) {
	for _, e := range d.Effects.Slice() {
		lifecycletest.ApplyToObject(o, &e)
	}
}

// ok is a successful driver result.
func ok(pid, node string) driverapi.Result {
	return driverapi.Result{ProviderID: pid, NodeName: node, OwnerUID: machineUID}
}

// fail is a driver result with a status error of code c.
func fail(c driverapi.Code, msg string) driverapi.Result {
	return driverapi.ResultOf(driverapi.MethodNone, driverapi.Error(c, msg))
}

// undecodable is a driver result whose error is not a status error.
func undecodable(msg string) driverapi.Result {
	return driverapi.Result{Code: driverapi.Unknown, Undecodable: true, Message: msg, Text: msg}
}

// Results of the lookup that starts every creation pass.
var (
	notFound      = fail(driverapi.NotFound, "no instance for machine-1")
	unimplemented = fail(driverapi.Unimplemented, "GetMachineStatus is not implemented")
)

// want is what a row asserts of a decision.
type want struct {
	rule    lifecycle.Rule
	phase   phase.Phase
	op      op
	period  time.Duration
	effects []string
	changed bool
}

// op is a LastOperation as asserted: type, state, error code and the
// rendered description.
type op struct {
	typ   lastop.Type
	state lastop.State
	code  string
	desc  string
}

func assertDecision(t *testing.T, w want, d lifecycle.Decision) {
	t.Helper()
	require.Equal(t, w.rule.String(), d.Rule.String(), "rule")
	require.Equal(t, w.phase.Label(), d.Status.Phase.Label(), "phase")
	got := op{d.Status.LastOp.Type, d.Status.LastOp.State, d.Status.LastOp.ErrorCode,
		lifecycle.Describe(&d.Status, machineName)}
	require.Equal(t, w.op, got, "last operation")
	require.Equal(t, w.period, d.Period, "retry period")
	if w.effects == nil {
		w.effects = []string{}
	}
	require.Equal(t, w.effects, d.Lines(), "effects")
	require.Equal(t, w.changed, d.Changed, "status changed")
}

// run steps in and, for each result given, feeds it back as the outcome
// of the previous decision, returning every decision.
func run(t *testing.T, cfg lifecycle.Config, in lifecycle.Input, results ...driverapi.Result) []lifecycle.Decision {
	t.Helper()
	return runCreated(t, cfg, in, lifecycle.Node{}, results...)
}

// runCreated is run for a shell that finds created, a node of the target
// cluster, when a CreateMachine result names it (Outcome.CreatedNode).
func runCreated(t *testing.T, cfg lifecycle.Config, in lifecycle.Input, created lifecycle.Node, results ...driverapi.Result) []lifecycle.Decision {
	t.Helper()
	ds := []lifecycle.Decision{step(t, cfg, in)}
	for _, r := range results {
		in = thenCreated(in, ds[len(ds)-1], r, created)
		ds = append(ds, step(t, cfg, in))
	}
	return ds
}

// lastInput returns the input of the last step run would make.
func lastInput(in lifecycle.Input, ds []lifecycle.Decision, results ...driverapi.Result) lifecycle.Input {
	return lastInputCreated(in, lifecycle.Node{}, ds, results...)
}

// lastInputCreated returns the input of the last step runCreated would
// make.
func lastInputCreated(in lifecycle.Input, created lifecycle.Node, ds []lifecycle.Decision, results ...driverapi.Result) lifecycle.Input {
	for i, r := range results {
		in = thenCreated(in, ds[i], r, created)
	}
	return in
}

// rowCase starts from an input, feeds the results in turn as outcomes of
// the previous decisions, and asserts the last decision.
type rowCase struct {
	name    string
	cfg     func(*lifecycle.Config)
	in      func() lifecycle.Input
	results []driverapi.Result
	// created is the node the shell finds when a CreateMachine result
	// names it (Outcome.CreatedNode); zero for none.
	created lifecycle.Node
	want    want
	check   func(t *testing.T, in lifecycle.Input, d lifecycle.Decision)
}

func runRows(t *testing.T, cases []rowCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := lifecycle.DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			in := tc.in()
			ds := runCreated(t, cfg, in, tc.created, tc.results...)
			d := ds[len(ds)-1]
			assertDecision(t, tc.want, d)
			if tc.check != nil {
				tc.check(t, lastInputCreated(in, tc.created, ds, tc.results...), d)
			}
		})
	}
}

const (
	lookupCall = "call GetMachineStatus machine-1 uid=uid-1 key=uid-1/0"
	createCall = "call CreateMachine machine-1 uid=uid-1 key=uid-1/0"
	initCall   = "call InitializeMachine machine-1 providerID=fake:///eu-1/vm-1 uid=uid-1"
)

func sortStrings(s []string) { slices.Sort(s) }

// checked returns cfg checked for StepInto, failing the test when it does
// not pass Validate.
func checked(t testing.TB, cfg lifecycle.Config) *lifecycle.Checked {
	t.Helper()
	k, err := cfg.Check()
	if err != nil {
		t.Fatal(err)
	}
	return &k
}
