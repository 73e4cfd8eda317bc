package lifecycletest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/lifecycle/pass"
)

// scriptLayer stands between pass.Run and a script's world, as a shell's
// own layer would (a cache, a client's retries), passing every call on;
// its faults break one obligation each, and it counts what it passed on.
type scriptLayer struct {
	pass.Shell
	skipSave   bool // report a save that never reaches the world
	skipEffect bool // leave out the first effect of every decision
	skipCall   bool // answer driver calls without asking the provider
	early      bool // write the finalizer on its own, before any decision
	lag        bool // show the object without the finalizer written (a cache lagging the pass's own writes)
	calls      int
	fresh      bool // no effect passed on since the last Observe or Save
}

// wrap puts the layer over the script's world.
func (l *scriptLayer) wrap(world pass.Shell) pass.Shell {
	l.Shell = world
	return l
}

func (l *scriptLayer) Observe(ctx context.Context, now time.Time, in *lifecycle.Input) error {
	if l.early {
		l.early = false
		l.Shell.Apply(ctx, &lifecycle.Effect{Kind: lifecycle.KindEnsureFinalizer, Value: "machine.sapcloud.io/machine-controller-manager"})
	}
	l.calls++
	l.fresh = true
	err := l.Shell.Observe(ctx, now, in)
	if l.lag {
		in.Object.Finalizer = false
	}
	return err
}

func (l *scriptLayer) Save(ctx context.Context, st *lifecycle.Status) lifecycle.Write {
	l.calls++
	l.fresh = true
	if l.skipSave {
		return lifecycle.WriteOK
	}
	return l.Shell.Save(ctx, st)
}

func (l *scriptLayer) Apply(ctx context.Context, e *lifecycle.Effect) (lifecycle.Write, string) {
	l.calls++
	first := l.fresh
	l.fresh = false
	if l.skipEffect && first {
		return lifecycle.WriteOK, ""
	}
	return l.Shell.Apply(ctx, e)
}

func (l *scriptLayer) Invoke(ctx context.Context, c *driverapi.Call, res *driverapi.Result) {
	l.calls++
	l.fresh = false
	if l.skipCall {
		*res = driverapi.Result{Method: c.Method}
		return
	}
	l.Shell.Invoke(ctx, c, res)
}

// A machine from nothing to Running after its first CreateMachine failed,
// told with a scripted fault, ticks, its node and the provider's view.
const story = `# A machine is created; its first CreateMachine fails.
new name=m-1 uid=u-1
----
machine m-1 uid=u-1 owner=ms-1 created at T+0s

provider fail method=CreateMachine code=ResourceExhausted msg="quota exceeded"
----
CreateMachine fails with ResourceExhausted "quota exceeded" the next 1 time(s)

pass
----
1 create.lookup: phase=None stage=none
    ensure-finalizer machine.sapcloud.io/machine-controller-manager
    call GetMachineStatus m-1 uid=u-1 key=u-1/0 => NotFound "no instance for machine m-1"
2 create.vm-not-found: phase=None stage=creating, saved
    ensure-bootstrap-token m-1 expires 2026-11-01T10:20:00Z
    call CreateMachine m-1 uid=u-1 key=u-1/0 => ResourceExhausted "quota exceeded" [provider: scripted failure, 0 left]
3 create.resource-exhausted: phase=CrashLoopBackOff stage=creating, saved
    event Warning CreateFailed (create.resource-exhausted)
4 create.backoff: phase=CrashLoopBackOff stage=creating
requeue 10m0s, waiting for retry until T+10m0s
lastop: Create/Failed ResourceExhausted "Cloud provider message - machine codes error: code = [ResourceExhausted] message = [quota exceeded]"

tick 10m
----
now T+10m0s

pass
----
1 create.lookup: phase=CrashLoopBackOff stage=creating
    call GetMachineStatus m-1 uid=u-1 key=u-1/0 => NotFound "no instance for machine m-1"
2 create.vm-not-found: phase=CrashLoopBackOff stage=creating
    ensure-bootstrap-token m-1 expires 2026-11-01T10:30:00Z
    call CreateMachine m-1 uid=u-1 key=u-1/0 => OK providerID=tiny:///vm-1 node=ip-10-0-0-1 [provider: created tiny:///vm-1]
3 create.created: phase=CrashLoopBackOff stage=initializing, saved
    event Normal InstanceCreated (create.created)
    ensure-node-label ip-10-0-0-1
    ensure-priority 3
    ensure-provider-id tiny:///vm-1
    call InitializeMachine m-1 providerID=tiny:///vm-1 uid=u-1 => OK providerID=tiny:///vm-1 node=ip-10-0-0-1 [provider: initialized tiny:///vm-1]
4 create.pending: phase=Pending stage=none, saved
    event Normal InstanceReady (create.pending)
5 health.waiting-for-node: phase=Pending stage=none
requeue 1m0s, waiting for node-join until T+20m0s
lastop: Create/Processing "Creating machine on cloud provider"

node register
----
node ip-10-0-0-1 providerID=tiny:///vm-1 Ready=False taint=startup finalizer volumes=1 attachments=1

node untaint=startup
----
node ip-10-0-0-1 providerID=tiny:///vm-1 Ready=False finalizer volumes=1 attachments=1

node ready
----
node ip-10-0-0-1 providerID=tiny:///vm-1 Ready=True finalizer volumes=1 attachments=1

pass
----
1 health.joined: phase=Running stage=none, saved
    event Normal MachineRunning (health.joined)
    label-node ip-10-0-0-1 node.gardener.cloud/machine-name=m-1
    delete-bootstrap-token m-1
2 metadata.observe: phase=Running stage=none
    call GetMachineStatus m-1 providerID=tiny:///vm-1 uid=u-1 key=u-1/0 => OK providerID=tiny:///vm-1 node=ip-10-0-0-1 owner=u-1 metadata={}
3 metadata.synced: phase=Running stage=none, saved
4 health.healthy: phase=Running stage=none
requeue 10m22.467481288s
lastop: Create/Successful "Machine m-1 successfully joined the cluster in 10m0s"

provider
----
provider: 1 instance(s), 1 created by CreateMachine
  tiny:///vm-1 machine=m-1 owner=u-1 key=u-1/0 node=ip-10-0-0-1 initialized
`

// The pass tells the story alike with and without a layer that passes
// every call on.
func TestScriptRunsWithAndWithoutALayer(t *testing.T) {
	s, err := lifecycletest.ParseScript("story", story)
	require.NoError(t, err)
	layer := &scriptLayer{}
	for _, opts := range []lifecycletest.ScriptOptions{{}, {WrapShell: layer.wrap}} {
		run, err := s.Run(opts)
		require.NoError(t, err)
		require.Empty(t, run.Diffs, "%v", run.Diffs)
		require.Equal(t, story, run.Text)
	}
	require.Positive(t, layer.calls, "the passes went through the layer")
}

// A changed expectation is reported with its line, and Text holds the
// output produced.
func TestScriptReportsDifferences(t *testing.T) {
	changed := strings.Replace(story, "0 left]", "1 left]", 1)
	s, err := lifecycletest.ParseScript("story", changed)
	require.NoError(t, err)
	run, err := s.Run(lifecycletest.ScriptOptions{})
	require.NoError(t, err)
	require.Len(t, run.Diffs, 1)
	require.Equal(t, 10, run.Diffs[0].Line)
	require.Equal(t, "pass", run.Diffs[0].Command)
	require.Contains(t, run.Diffs[0].Want, "1 left]")
	require.Contains(t, run.Diffs[0].Got, "0 left]")
	require.Contains(t, run.Diffs[0].String(), "line 10: pass\n--- want\n")
	require.Equal(t, story, run.Text)
}

// A pass that breaks an obligation, here by a layer's fault, fails the
// pass command, saying which.
func TestScriptCatchesABrokenShell(t *testing.T) {
	s, err := lifecycletest.ParseScript("story", story)
	require.NoError(t, err)
	for _, c := range []struct {
		layer scriptLayer
		want  string
	}{
		{scriptLayer{skipSave: true}, "effect ensure-bootstrap-token m-1 expires 2026-11-01T10:20:00Z before the changed status was saved"},
		{scriptLayer{skipEffect: true}, "where decision create.lookup asks ensure-finalizer"},
		{scriptLayer{skipCall: true}, "reported before the effects of create.lookup were carried out"},
		{scriptLayer{early: true}, "before any decision"},
		{scriptLayer{lag: true}, "decision create.vm-not-found was made from an input that is not the world as observed"},
	} {
		_, err := s.Run(lifecycletest.ScriptOptions{WrapShell: c.layer.wrap})
		require.ErrorContains(t, err, "the shell broke an obligation")
		require.ErrorContains(t, err, c.want)
	}
}

// The options' Check sees every decision of the passes; its error fails
// the command.
func TestScriptCheckFailsTheCommand(t *testing.T) {
	s, err := lifecycletest.ParseScript("story", story)
	require.NoError(t, err)
	seen := 0
	_, err = s.Run(lifecycletest.ScriptOptions{Check: func(_ *lifecycle.Config, _ *lifecycle.Input, d *lifecycle.Decision) error {
		if seen++; d.Rule == lifecycle.RuleCreateBackoff {
			return errors.New("no backoff wanted")
		}
		return nil
	}})
	require.ErrorContains(t, err, "story:10: pass: no backoff wanted")
	require.Equal(t, 4, seen)
}

// Bad scripts and commands are errors, not differences.
func TestScriptRejectsBadInput(t *testing.T) {
	_, err := lifecycletest.ParseScript("bad", "new name=m-1 uid=u-1\nmachine\n")
	require.ErrorContains(t, err, "bad:1: command \"new name=m-1 uid=u-1\" is not followed by a line ----")
	for cmd, want := range map[string]string{
		"new name=m-1 uid=u-1 colour=red": "unknown argument(s) colour",
		"fly":                             `unknown command "fly"`,
		"outcome":                         "no decision awaits its outcome",
		`tick "1m`:                        "unterminated quote",
		"new name=m-1 name=m-2":           "argument name given twice",
	} {
		s, err := lifecycletest.ParseScript("bad", cmd+"\n----\nok\n")
		require.NoError(t, err)
		_, err = s.Run(lifecycletest.ScriptOptions{})
		require.ErrorContains(t, err, want, cmd)
	}
}

// Tell a story with a script whose outputs are still empty: the run fills
// them in, as RunScripts does with update, for review. Here the machine
// finds another incarnation's instance under its name, deletes it, and
// creates its own with the next attempt's key.
func ExampleScript() {
	s, err := lifecycletest.ParseScript("example", `new name=m-1 uid=u-1
----

provider instance name=m-1 uid=u-0
----

pass
----
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	run, err := s.Run(lifecycletest.ScriptOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d outputs differ\n\n%s", len(run.Diffs), run.Text)
	// Output:
	// 3 outputs differ
	//
	// new name=m-1 uid=u-1
	// ----
	// machine m-1 uid=u-1 owner=ms-1 created at T+0s
	//
	// provider instance name=m-1 uid=u-0
	// ----
	// provider: tiny:///vm-1 of machine m-1 owner u-0 node ip-10-0-0-1
	//
	// pass
	// ----
	// 1 create.lookup: phase=None stage=none
	//     ensure-finalizer machine.sapcloud.io/machine-controller-manager
	//     call GetMachineStatus m-1 uid=u-1 key=u-1/0 => OK providerID=tiny:///vm-1 node=ip-10-0-0-1 owner=u-0 metadata={}
	// 2 create.foreign-instance: phase=None stage=none, saved
	//     event Warning ForeignInstance (create.foreign-instance)
	//     call DeleteMachine m-1 providerID=tiny:///vm-1 uid=u-0 => OK [provider: deleted tiny:///vm-1]
	// 3 create.foreign-deleted: phase=None stage=none, saved
	//     call GetMachineStatus m-1 uid=u-1 key=u-1/1 => NotFound "no instance for machine m-1"
	// 4 create.vm-not-found: phase=None stage=creating, saved
	//     ensure-bootstrap-token m-1 expires 2026-11-01T10:20:00Z
	//     call CreateMachine m-1 uid=u-1 key=u-1/1 => OK providerID=tiny:///vm-2 node=ip-10-0-0-2 [provider: created tiny:///vm-2]
	// 5 create.created: phase=None stage=initializing, saved
	//     event Normal InstanceCreated (create.created)
	//     ensure-node-label ip-10-0-0-2
	//     ensure-priority 3
	//     ensure-provider-id tiny:///vm-2
	//     call InitializeMachine m-1 providerID=tiny:///vm-2 uid=u-1 => OK providerID=tiny:///vm-2 node=ip-10-0-0-2 [provider: initialized tiny:///vm-2]
	// 6 create.pending: phase=Pending stage=none, saved
	//     event Normal InstanceReady (create.pending)
	// 7 health.waiting-for-node: phase=Pending stage=none
	// requeue 1m0s, waiting for node-join until T+20m0s
	// lastop: Create/Processing "Creating machine on cloud provider"
}

// Run a script's passes through your own layer between pass.Run and the
// world: the script's world checks that what reaches it keeps the
// caller's obligations.
func ExampleScriptOptions() {
	s, err := lifecycletest.ParseScript("story", story)
	if err != nil {
		fmt.Println(err)
		return
	}
	run, err := s.Run(lifecycletest.ScriptOptions{WrapShell: (&scriptLayer{}).wrap})
	fmt.Println(len(run.Diffs), err)
	_, err = s.Run(lifecycletest.ScriptOptions{WrapShell: (&scriptLayer{skipSave: true}).wrap})
	fmt.Println(strings.SplitN(err.Error(), "\n", 2)[0])
	// Output:
	// 0 <nil>
	// story:10: pass: the shell broke an obligation: effect ensure-bootstrap-token m-1 expires 2026-11-01T10:20:00Z before the changed status was saved
}
