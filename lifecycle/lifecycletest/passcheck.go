package lifecycletest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/pass"
	"github.com/purelifecycle/machine/phase"
)

// ShellCheck checks a shell, an implementation of pass.Shell, by running
// lifecycle/pass over it from many start states with faults injected,
// judging what happened from the world's truth rather than from the
// lifecycle's records. For each start state it runs the passes once without
// faults, then once for every point at which each fault can strike (the
// k-th call, write or observation of the fault-free run, and so on for
// every k), and, when Thorough, with random faults. The faults are those
// of [PassFaults]: the checker wraps the shell to inject them, and, where
// the world implements [WriteRefuser], has the world's API refuse writes.
//
// Every run is judged as it goes:
//
//   - every decision by [Check] (the safety promises of the lifecycle),
//     with the input it was decided from;
//   - the shell's contract, against the world's truth: Observe returns the
//     status stored and the object as the shell's own writes left it, Now
//     and no outcome, and sets every field of the input, which it is
//     handed holding values of an earlier observation (the strings,
//     volume attachments, observer and problem of it are checked); a
//     status Save reported ok is the one stored; an
//     effect reported ok shows in the world (the object's fields, the
//     token, a node's label, taint or deletion); the driver's answer is of
//     the method called; Node returns the node of that name;
//   - the world's safety after every call: never two live instances of
//     the machine, never more than one ever made for it; none deleted while
//     the machine is not being deleted; no effect on a node that runs
//     another machine's instance; the finalizer never removed while an
//     instance of the machine lives;
//   - liveness: once the faults stop, no pass ends at
//     lifecycle.MaxStepsPerPass, and the machine settles within MaxPasses
//     passes at its first end: Running, with one initialized instance that
//     its status and spec name, and its own node registered, healthy,
//     labelled with the machine's name and without the startup taint (or
//     Failed, for a machine that started Failed, and either for one that
//     started Unknown, its node unhealthy); then, its deletion requested,
//     within MaxPasses passes again, gone, with no instance, node or
//     bootstrap token of it left.
//
// Between passes the checker plays the cluster: time moves on by each
// pass's requeue (a few seconds after a crash), a kubelet registers the
// node of an initialized instance of the machine, Ready and with the
// startup taint, and the owner requests the machine's deletion once it
// reached its first end.
//
// A violation fails the test, with the start state, the faults of the run,
// the decision and input it concerns and the run's recent calls. Runs go
// on after a violation; the report counts them.
type ShellCheck struct {
	// NewWorld returns a world in the state spec describes, with the shell
	// under test acting on it. It is called once per run.
	NewWorld func(spec WorldSpec) PassWorld
	// Config is the lifecycle's configuration; nil means
	// lifecycle.DefaultConfig.
	Config *lifecycle.Config
	// Starts are the start states to run from; nil means [ShellStarts], or
	// [AllShellStarts] when Thorough.
	Starts []Start
	// Faults are the faults to inject; 0 means [AllPassFaults].
	Faults PassFaults
	// Thorough adds, for each start state, runs with random faults at
	// random calls of their first passes.
	Thorough bool
	// RandomRuns is the number of those runs per start state; 0 means 20.
	RandomRuns int
	// MaxPasses bounds the passes a machine may take to each of its ends
	// once the faults stopped; 0 means 30.
	MaxPasses int
	// MaxReports bounds the violations reported in detail; 0 means 5.
	MaxReports int
}

// ShellCheckReport counts what a [ShellCheck] did.
type ShellCheckReport struct {
	// Runs counts the runs, Passes and Decisions what they made.
	Runs, Passes, Decisions int
	// Injected counts the faults injected.
	Injected int
	// Failed counts the runs that found a violation.
	Failed int
	// MostPasses is the most passes a run took to one of its ends once its
	// faults stopped.
	MostPasses int
}

// Run runs the check and reports every violation to t.
func (c *ShellCheck) Run(t testing.TB) ShellCheckReport {
	t.Helper()
	raw := lifecycle.DefaultConfig()
	if c.Config != nil {
		raw = *c.Config
	}
	checked, err := raw.Check()
	switch {
	case err != nil:
		t.Errorf("lifecycletest: ShellCheck: %v", err)
		return ShellCheckReport{}
	case c.NewWorld == nil:
		t.Errorf("lifecycletest: ShellCheck needs NewWorld")
		return ShellCheckReport{}
	}
	starts := c.Starts
	if starts == nil {
		starts = ShellStarts()
		if c.Thorough {
			starts = AllShellStarts()
		}
	}
	rep := checkReporter{t: t, limit: c.MaxReports}
	if rep.limit == 0 {
		rep.limit = 5
	}
	for _, p := range starts {
		if !shellStartOK(p) {
			t.Errorf("lifecycletest: ShellCheck cannot set a world up in start state %v", p)
			continue
		}
		c.runStart(&rep, &raw, &checked, p)
	}
	if more := rep.Failed - rep.reported; more > 0 {
		t.Errorf("lifecycletest: ShellCheck: %d more runs found violations", more)
	}
	return rep.ShellCheckReport
}

// runStart runs the check from start state p: once without faults, then
// with each fault at each point, then with random faults when Thorough.
func (c *ShellCheck) runStart(rep *checkReporter, raw *lifecycle.Config, checked *lifecycle.Checked, p Start) {
	base := c.newRun(raw, checked, p, faultPlan{})
	rep.add(base)
	if base.err != "" {
		return // the faults would only show the same violation again
	}
	faults := c.Faults
	if faults == 0 {
		faults = AllPassFaults
	}
	for _, f := range faults.kinds() {
		switch {
		case f == FaultWorldRefuses && base.refuser == nil:
		case f == FaultWriteOutage:
			rep.add(c.newRun(raw, checked, p, faultPlan{kind: f}))
		default:
			for k := 1; k <= base.chances[f.index()]; k++ {
				rep.add(c.newRun(raw, checked, p, faultPlan{kind: f, at: k}))
			}
		}
	}
	if !c.Thorough {
		return
	}
	n := c.RandomRuns
	if n == 0 {
		n = 20
	}
	for seed := range n {
		plan := faultPlan{random: faults, rng: rand.New(rand.NewPCG(uint64(p), uint64(seed)))}
		rep.add(c.newRun(raw, checked, p, plan))
	}
}

// checkReporter adds up the runs of a check and reports the first limit
// violations to t.
type checkReporter struct {
	ShellCheckReport
	t               testing.TB
	limit, reported int
}

func (rep *checkReporter) add(r *shellRun) {
	rep.Runs++
	rep.Passes += r.pass
	rep.Decisions += r.decisions
	rep.Injected += r.injected
	rep.MostPasses = max(rep.MostPasses, r.mostQuiet)
	if r.err == "" {
		return
	}
	rep.Failed++
	if rep.reported < rep.limit {
		rep.t.Helper()
		rep.t.Errorf("%s", r.describe())
		rep.reported++
	}
}

// shellRun is one run of a ShellCheck: a world from one start state, the
// passes over it with the faults of one plan, and what was judged.
type shellRun struct {
	c       *ShellCheck
	raw     *lifecycle.Config
	cfg     *lifecycle.Checked
	start   Start
	spec    WorldSpec
	world   PassWorld
	refuser WriteRefuser
	plan    faultPlan
	shell   faultShell
	scratch pass.Scratch

	now  time.Time
	pass int
	// chances counts, for each fault, the calls into the shell so far that
	// it could have struck.
	chances [len(passFaultNames)]int
	// passObserves counts the observations of the current pass;
	// passActive is set by a decision of it that changed the status or
	// asked more than GetMachineStatus.
	passObserves int
	passActive   bool
	// staleRead is set when the pass's first observation was made stale:
	// its first save conflicts.
	staleRead bool
	// lastObs is the observation the world gave last, passStart the one
	// at the start of the last pass, both copies.
	lastObs, passStart *lifecycle.Input

	// linked holds the node names the object's node label or the status
	// named, and those of the nodes an effect was carried out on.
	linked map[string]bool
	// ours holds the providerIDs of the machine's own instances, ever seen.
	ours map[string]bool
	// live holds those of its instances live after the last call.
	live []string
	// everLive holds those ever live, in the order they were first seen.
	everLive []string

	// faultPass is the last pass a fault was injected in; quiet counts the
	// passes since, in the current leg; mostQuiet the most a leg took.
	faultPass, quiet, mostQuiet int
	want                        ends

	decisions, injected int
	trace               []traceLine
	err                 string
	errDetail           string
}

// ends is a set of end states, as bits.
type ends uint8

const (
	endsRunning ends = 1 << iota
	endsFailed
	endsGone
)

func (e ends) String() string {
	var out []string
	for i, n := range []string{"Running", "Failed", "gone"} {
		if e&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return strings.Join(out, " or ")
}

// stopRun unwinds a pass when a run found a violation; passCrash when its
// plan crashes the pass.
type (
	stopRun   struct{}
	passCrash struct{}
)

// newRun sets up the world of start p and plays it with plan's faults.
func (c *ShellCheck) newRun(raw *lifecycle.Config, cfg *lifecycle.Checked, p Start, plan faultPlan) *shellRun {
	spec, own := worldSpec(raw, p)
	r := &shellRun{c: c, raw: raw, cfg: cfg, start: p, spec: spec, plan: plan, now: spec.Now, ours: map[string]bool{},
		linked: map[string]bool{}}
	for _, id := range own {
		r.ours[id] = true
	}
	r.want = firstEnds(&spec)
	spec2, _ := worldSpec(raw, p) // the world's own copy: it may keep what it is given
	r.world = c.NewWorld(spec2)
	r.refuser, _ = r.world.(WriteRefuser)
	r.shell = faultShell{r}
	if v := r.observeInstances(r.world.Truth()); v != "" {
		r.fail("the start state: "+v, "")
		return r
	}
	r.play()
	return r
}

// firstEnds returns the ends a machine starting in spec may reach before
// its deletion is requested.
func firstEnds(spec *WorldSpec) ends {
	switch {
	case !spec.Object.DeletionTime.IsZero():
		return endsGone
	case spec.Status.Phase == phase.Failed:
		return endsFailed
	case spec.Status.Phase == phase.Unknown:
		return endsRunning | endsFailed
	}
	return endsRunning
}

// maxPasses is the bound of passes to an end once faults stopped.
func (r *shellRun) maxPasses() int {
	if r.c.MaxPasses > 0 {
		return r.c.MaxPasses
	}
	return 30
}

// play runs passes until the machine is gone, a violation is found, or
// the bound of passes is spent.
func (r *shellRun) play() {
	for r.err == "" {
		r.pass++
		r.kubelet()
		rep, crashed := r.onePass()
		if r.err != "" || r.judgePass(rep, crashed) {
			return
		}
		if crashed {
			r.now = r.now.Add(5 * time.Second)
		} else {
			r.now = r.now.Add(max(rep.Requeue, time.Second))
		}
	}
}

// judgePass judges the liveness of the run after a pass that ended with
// rep, or crashed, moves the run on to its next end when the pass reached
// one, and reports whether the run is over.
func (r *shellRun) judgePass(rep pass.Report, crashed bool) (over bool) {
	faulted := r.faultPass == r.pass
	if faulted || r.plan.active(r.pass) {
		r.quiet = 0
	} else {
		r.quiet++
		if !crashed && rep.End == pass.EndLastStep {
			r.fail("a pass without faults ended after lifecycle.MaxStepsPerPass steps: the machine loops", "")
			return true
		}
	}
	switch {
	case !crashed && !faulted && r.reached(rep):
		r.mostQuiet = max(r.mostQuiet, r.quiet)
		if r.want == endsGone || r.err != "" {
			return true
		}
		r.world.RequestDeletion(r.now)
		r.tracef("the owner deletes the machine")
		r.want, r.quiet = endsGone, 0
	case r.quiet >= r.maxPasses() || r.pass > 3*r.maxPasses()+randomPasses:
		r.fail(fmt.Sprintf("the machine did not settle at its end (%s) within %d passes after the faults stopped",
			r.want, r.maxPasses()), "")
		return true
	}
	return false
}

// onePass runs one pass, recovering from a crash the plan injected or a
// violation that stopped it.
func (r *shellRun) onePass() (rep pass.Report, crashed bool) {
	defer func() {
		if x := recover(); x != nil {
			switch x.(type) {
			case passCrash:
				crashed = true
			case stopRun:
			default:
				panic(x)
			}
		}
	}()
	r.passObserves, r.passActive, r.staleRead = 0, false, false
	r.tracef("pass %d at %s", r.pass, r.now.Sub(Epoch))
	rep = pass.Run(context.Background(), r.cfg, &r.shell, r.now, &r.scratch, r)
	r.tracef("  end %s, requeue %s", rep.End, rep.Requeue)
	return rep, false
}

// Decided implements pass.Observer: every decision is checked.
func (r *shellRun) Decided(in *lifecycle.Input, d *lifecycle.Decision) {
	r.decisions++
	if d.Changed || d.Effects.Len() > 1 || d.Effects.Len() == 1 && d.Call.Method != driverapi.MethodGetStatus {
		r.passActive = true
	}
	decided := *d
	r.tracef("  decide %s", lazy(func() string { return decisionLine(&decided) }))
	if err := Check(r.raw, in, d); err != nil {
		r.fail(err.Error(), "decided from:\n"+describeInput(in)+"\ndecision:\n"+d.String())
		panic(stopRun{})
	}
}

// kubelet plays the kubelets: an initialized instance of the machine
// without its node registers it, Ready, with the startup taint.
func (r *shellRun) kubelet() {
	t := r.world.Truth()
	for _, i := range t.Instances {
		if !r.ours[i.ProviderID] || !i.Initialized || i.NodeName == "" || t.node(i.NodeName) != nil {
			continue
		}
		r.world.AddNode(lifecycle.Node{Name: i.NodeName, ProviderID: i.ProviderID, Taints: lifecycle.InstanceNotReady,
			Conditions: []lifecycle.Condition{{Type: lifecycle.ConditionReady, Status: lifecycle.ConditionTrue,
				Since: lifecycle.StampOf(r.now)}}})
		r.tracef("the kubelet of %s registers node %s", i.ProviderID, i.NodeName)
	}
}

// fail records the run's first violation: what, and details for the
// message.
func (r *shellRun) fail(what, detail string) {
	if r.err == "" {
		r.err, r.errDetail = what, detail
	}
}

// tracef adds a line to the run's trace, which keeps the last lines. The
// line is formatted only when a violation is described: an argument that
// is costly to render is passed as a [lazy].
func (r *shellRun) tracef(format string, a ...any) {
	const keep = 60
	if len(r.trace) == 2*keep {
		r.trace = append(r.trace[:0], r.trace[keep:]...)
	}
	r.trace = append(r.trace, traceLine{format, a})
}

// traceLine is a line of a run's trace, not formatted yet.
type traceLine struct {
	format string
	args   []any
}

func (l traceLine) String() string { return fmt.Sprintf(l.format, l.args...) }

// lazy renders a trace line's argument when the line is formatted.
type lazy func() string

func (l lazy) String() string { return l() }

// describe renders the run's violation for a test failure.
func (r *shellRun) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "shell check: %s\nstart: %s\nfaults: %s", r.err, r.start, r.plan)
	if r.errDetail != "" {
		b.WriteString("\n" + r.errDetail)
	}
	b.WriteString("\nthe world now:\n" + indent(r.world.Truth().String()))
	b.WriteString("\nthe run's last calls:")
	trace := r.trace
	if len(trace) > 60 {
		trace = trace[len(trace)-60:]
	}
	for _, l := range trace {
		b.WriteString("\n  " + l.String())
	}
	return b.String()
}

// indent indents every line of s by two spaces.
func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }
