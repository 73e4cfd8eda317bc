package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/controller/fakecloud"
	"github.com/purelifecycle/machine/controller/machines"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// The soak: 570 machines created, 320 of them deleted (50 of those created
// again under their name once gone, others replaced by new names, 20 as
// soon as they are made), some with pods their drain evicts, while 8 % of the driver calls fail (half
// of them carried out, their answer lost) and 3 % of the GetMachineStatus
// calls answer NotFound for an instance that exists, 3 % of the machine
// writes are refused with a conflict, 3 % of the status writes are
// reported done but never made, a writer of its own bumps machines'
// annotations, and the
// controller is stopped and started again, twice under the faults and
// once after they stop. Every decision is checked with
// lifecycletest.Check. In the end every machine must be at its end:
// Running with a Ready node of its own and one instance, or gone with no
// instance, node or bootstrap token left, its instance deleted only once
// its node held no pod a drain removes.
//
// CONTROLLER_SOAK_SEED sets the seed of the faults and of the workload;
// the test logs the one it used.
func TestSoakMachinesThroughFaultsAndRestarts(t *testing.T) {
	needEnv(t)
	if testing.Short() {
		t.Skip("the soak takes minutes")
	}
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CONTROLLER_SOAK_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
	}
	t.Logf("seed %d (CONTROLLER_SOAK_SEED)", seed)

	s := newSoak(t, seed)
	start := time.Now()
	s.run()
	took := time.Since(start)
	s.check(took)
}

const soakGroup = "soak"

// soak is the workload of the soak and what it needs to check the end.
type soak struct {
	t       *testing.T
	ns      string
	p       *fakecloud.Provider
	dice    *dice
	kubelet *nodeKubelet
	checker *checker
	deletes *deleteRecorder
	driver  *faultyDriver
	writes  *writeFaults
	mgr     *testManager
	bumps   atomic.Int64

	restarts     int
	incarnations []*incarnation
	newest       map[string]*incarnation // by name
	next         int                     // the number of the next new name
	names        atomic.Pointer[[]string]
	pods         int
}

// incarnation is one machine object the soak created.
type incarnation struct {
	name    string
	uid     types.UID
	deleted bool // its deletion asked
	// recreate creates the name again once this incarnation is gone.
	recreate bool
	// podsDecided reports that its pods were decided (once Running).
	podsDecided bool
}

func newSoak(t *testing.T, seed uint64) *soak {
	p := newProvider("zone-soak")
	cfg := lifecycle.DefaultConfig()
	cfg.EvictRetryInterval = 500 * time.Millisecond
	cfg.ForcedDrainTimeout = 5 * time.Second
	cfg.WaitCheck = 2 * time.Second
	cfg.Retry.MaxBackoff = 10 * time.Second
	d := newDice(seed)
	s := &soak{
		t: t, ns: newNamespace(t), p: p, dice: d,
		kubelet: newNodeKubelet(p, 200*time.Millisecond),
		checker: newChecker(cfg),
		deletes: newDeleteRecorder(p),
		writes:  &writeFaults{dice: d},
		newest:  map[string]*incarnation{},
	}
	s.driver = &faultyDriver{d: &recordingDriver{Provider: p, deletes: s.deletes}, dice: d}
	s.driver.rate.set(0.08)
	s.driver.notFound.set(0.03)
	s.writes.conflictRate.set(0.03)
	s.writes.lost.set(0.03)
	s.checker.reportOnFailure(t)
	s.kubelet.start(t)
	startPodReaper(t, s.ns, 200*time.Millisecond)
	s.mgr = s.startManager(&cfg)
	return s
}

// startManager starts a manager over the soak's machines, with the faults.
func (s *soak) startManager(cfg *lifecycle.Config) *testManager {
	return startManager(s.t, soakGroup, s.p, func(o *options) {
		o.workers = 8
		o.config = cfg
		o.observer = s.checker
		o.callTimeout = 10 * time.Second
		o.driver = func(*fakecloud.Provider) driverapi.Driver { return s.driver }
		o.tweak = s.writes.wrap
	})
}

// restart stops the manager and starts another.
func (s *soak) restart() {
	s.t.Helper()
	require.NoError(s.t, s.mgr.stop(s.t, time.Minute))
	cfg := s.checker.cfg
	s.mgr = s.startManager(&cfg)
	s.restarts++
	s.t.Logf("restart %d", s.restarts)
}

// run plays the workload.
func (s *soak) run() {
	t := s.t
	stopBumper := s.startBumper()
	defer stopBumper()

	// 250 machines; the controller restarts once 100 are Running.
	for range 250 {
		s.create(s.newName())
	}
	s.until("100 Running", 3*time.Minute, func(snap map[string]*v1alpha1.Machine) bool { return s.running(snap) >= 100 })
	s.restart()
	s.until("240 Running", 3*time.Minute, func(snap map[string]*v1alpha1.Machine) bool { return s.running(snap) >= 240 })

	// 150 of them deleted, one in three to be created again under its
	// name, while 200 new ones are created, and 20 more deleted as soon as
	// they are made (the first pass of each under way or not begun yet);
	// the controller restarts once half of those deletions are done.
	doomed := s.pick(150)
	for i := range 200 {
		s.create(s.newName())
		if i < len(doomed) {
			doomed[i].recreate = i%3 == 0
			s.delete(doomed[i])
		}
		if i%10 == 0 {
			name := s.newName()
			s.create(name)
			time.Sleep(time.Duration(s.dice.intN(100)) * time.Millisecond)
			s.delete(s.newest[name])
		}
	}
	s.until("75 deletions done", 3*time.Minute, func(snap map[string]*v1alpha1.Machine) bool {
		return s.gone(snap, doomed) >= 75
	})
	s.restart()
	s.until("the deleted machines gone and 50 created again", 3*time.Minute, func(snap map[string]*v1alpha1.Machine) bool {
		return s.gone(snap, doomed) == len(doomed) && s.pendingRecreations() == 0
	})

	// 150 more deleted, in any phase, and 50 new ones. The faults stop,
	// and the controller restarts in the middle of these deletions: the
	// new manager looks at every machine once, as the resync the lifecycle
	// asks after ten minutes would (a status write lost at rest waits for
	// it).
	doomed = s.pick(150)
	for i, inc := range doomed {
		s.delete(inc)
		if i%3 == 0 {
			s.create(s.newName())
		}
	}
	stopBumper()
	s.driver.rate.set(0)
	s.driver.notFound.set(0)
	s.writes.conflictRate.set(0)
	s.writes.lost.set(0)
	s.restart()
	s.until("every machine at its end", 4*time.Minute, func(snap map[string]*v1alpha1.Machine) bool {
		return s.atEnd(snap) == ""
	})
	t.Logf("%d machines created, %d deleted, %d pods, %d restarts", len(s.incarnations), s.deletedCount(), s.pods, s.restarts)
}

// newName returns the next new machine name.
func (s *soak) newName() string {
	s.next++
	return fmt.Sprintf("s-%03d", s.next-1)
}

// create creates a machine of that name.
func (s *soak) create(name string) {
	s.t.Helper()
	m := machineSpec(s.ns, name, time.Minute)
	m.Labels = map[string]string{managerLabel: soakGroup}
	m.Spec.MachineCreationTimeout = &metav1.Duration{Duration: 5 * time.Minute}
	require.NoError(s.t, k8s.Create(context.Background(), m))
	inc := &incarnation{name: name, uid: m.UID}
	s.incarnations = append(s.incarnations, inc)
	s.newest[name] = inc
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range s.newest {
			if !yield(n) {
				return
			}
		}
	})
	s.names.Store(&names)
}

// delete asks the incarnation's deletion.
func (s *soak) delete(inc *incarnation) {
	s.t.Helper()
	inc.deleted = true
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: inc.name, UID: inc.uid}}
	require.NoError(s.t, s.kubelet.requestDeletion(context.Background(), m))
}

// pick draws n of the machines not deleted.
func (s *soak) pick(n int) []*incarnation {
	var live []*incarnation
	for _, inc := range s.newest {
		if !inc.deleted {
			live = append(live, inc)
		}
	}
	slices.SortFunc(live, func(a, b *incarnation) int { return strings.Compare(a.name, b.name) })
	for i := len(live) - 1; i > 0; i-- {
		j := s.dice.intN(i + 1)
		live[i], live[j] = live[j], live[i]
	}
	return live[:min(n, len(live))]
}

// until plays the workload's part (tick) until cond holds of the
// machines, failing after timeout.
func (s *soak) until(what string, timeout time.Duration, cond func(map[string]*v1alpha1.Machine) bool) {
	s.t.Helper()
	start := time.Now()
	eventually(s.t, timeout, what, func() (bool, string) {
		snap := s.snapshot()
		s.tick(snap)
		if cond(snap) {
			return true, ""
		}
		time.Sleep(150 * time.Millisecond)
		return false, s.summary(snap)
	})
	s.t.Logf("%s after %s", what, time.Since(start).Round(time.Millisecond))
}

// snapshot returns the machines of the soak, by name.
func (s *soak) snapshot() map[string]*v1alpha1.Machine {
	s.t.Helper()
	var list v1alpha1.MachineList
	require.NoError(s.t, k8s.List(context.Background(), &list, client.InNamespace(s.ns)))
	out := make(map[string]*v1alpha1.Machine, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// tick plays the owner and the scheduler: a name whose incarnation to
// recreate is gone is created again; a machine that came up gets pods on
// its node, one in three of them one or two.
func (s *soak) tick(snap map[string]*v1alpha1.Machine) {
	for name, inc := range s.newest {
		m, ok := snap[name]
		if inc.deleted && inc.recreate && (!ok || m.UID != inc.uid) {
			s.create(name)
			continue
		}
		if inc.deleted || inc.podsDecided || !ok || m.UID != inc.uid || m.Status.CurrentStatus.Phase != "Running" {
			continue
		}
		inc.podsDecided = true
		if s.dice.intN(3) != 0 {
			continue
		}
		n := 1 + s.dice.intN(2)
		s.kubelet.unlessDeleting(inc.uid, func() {
			for i := range n {
				newPod(s.t, s.ns, fmt.Sprintf("%s-%s-%d", name, inc.uid[:8], i), "soak", m.Status.Node, false)
				s.pods++
			}
		})
	}
}

// running counts the Running machines not deleted.
func (s *soak) running(snap map[string]*v1alpha1.Machine) int {
	n := 0
	for name, inc := range s.newest {
		if m, ok := snap[name]; ok && !inc.deleted && m.UID == inc.uid && m.Status.CurrentStatus.Phase == "Running" {
			n++
		}
	}
	return n
}

// gone counts the incarnations that are gone.
func (s *soak) gone(snap map[string]*v1alpha1.Machine, incs []*incarnation) int {
	n := 0
	for _, inc := range incs {
		if m, ok := snap[inc.name]; !ok || m.UID != inc.uid {
			n++
		}
	}
	return n
}

// pendingRecreations counts the names to be created again.
func (s *soak) pendingRecreations() int {
	n := 0
	for _, inc := range s.newest {
		if inc.deleted && inc.recreate {
			n++
		}
	}
	return n
}

func (s *soak) deletedCount() int {
	n := 0
	for _, inc := range s.incarnations {
		if inc.deleted {
			n++
		}
	}
	return n
}

// summary counts the machines by phase.
func (s *soak) summary(snap map[string]*v1alpha1.Machine) string {
	phases := map[string]int{}
	for _, m := range snap {
		phases[m.Status.CurrentStatus.Phase]++
	}
	return fmt.Sprintf("%d machines by phase %v; %s", len(snap), phases, s.atEnd(snap))
}

// startBumper starts a writer that bumps an annotation of a random machine
// every 20 ms, as another controller's writes do: the manager's writes made
// from what it read before meet a conflict, and each bump starts a pass.
// The returned function stops it; it may be called more than once.
func (s *soak) startBumper() func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	rnd := rand.New(rand.NewPCG(s.dice.seed(), 1))
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			names := s.names.Load()
			if names == nil {
				continue
			}
			name := (*names)[rnd.IntN(len(*names))]
			m := &v1alpha1.Machine{}
			if k8s.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, m) != nil {
				continue
			}
			metav1.SetMetaDataAnnotation(&m.ObjectMeta, "test.purelifecycle.dev/bump", strconv.FormatInt(s.bumps.Add(1), 10))
			_ = k8s.Update(ctx, m)
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { cancel(); <-done }) }
}

// atEnd returns "" when every machine is at its end, else what is not:
// each incarnation deleted is gone, each other one Running with its node
// Ready; the provider holds one instance per Running machine and no
// other; no node is left of an instance that is gone; no bootstrap token
// is left of any of the machines.
func (s *soak) atEnd(snap map[string]*v1alpha1.Machine) string {
	ctx := context.Background()
	var nodes corev1.NodeList
	if err := k8s.List(ctx, &nodes); err != nil {
		return err.Error()
	}
	nodeOf := map[string]*corev1.Node{}
	for i := range nodes.Items {
		nodeOf[nodes.Items[i].Name] = &nodes.Items[i]
	}
	var problems []string
	alive := map[string]bool{} // UIDs
	for _, inc := range s.incarnations {
		m, ok := snap[inc.name]
		present := ok && m.UID == inc.uid
		switch {
		case inc.deleted && present:
			problems = append(problems, fmt.Sprintf("%s not gone (%s)", inc.name, m.Status.CurrentStatus.Phase))
		case inc.deleted:
		case !present:
			problems = append(problems, inc.name+" vanished")
		case m.Status.CurrentStatus.Phase != "Running":
			problems = append(problems, fmt.Sprintf("%s %s", inc.name, m.Status.CurrentStatus.Phase))
		case nodeOf[m.Status.Node] == nil || readyStatus(nodeOf[m.Status.Node]) != corev1.ConditionTrue:
			problems = append(problems, fmt.Sprintf("%s without a Ready node %q", inc.name, m.Status.Node))
		default:
			alive[string(inc.uid)] = true
		}
	}
	instances := map[string]int{}
	for _, inst := range s.p.Instances() {
		instances[inst.OwnerUID]++
		if !alive[inst.OwnerUID] {
			problems = append(problems, fmt.Sprintf("instance %s of %s (%s) left", inst.ProviderID, inst.MachineName, inst.OwnerUID))
		}
		delete(nodeOf, inst.NodeName)
	}
	for uid := range alive {
		if instances[uid] != 1 {
			problems = append(problems, fmt.Sprintf("machine %s has %d instances", uid, instances[uid]))
		}
	}
	for name := range nodeOf {
		if strings.HasPrefix(name, s.p.Zone+"-") {
			problems = append(problems, "node "+name+" left without its instance")
		}
	}
	var secrets corev1.SecretList
	if err := k8s.List(ctx, &secrets, client.InNamespace(lifecycle.BootstrapTokenNamespace),
		client.HasLabels{machines.TokenMachineUIDLabel}); err != nil {
		return err.Error()
	}
	uids := map[string]*incarnation{}
	for _, inc := range s.incarnations {
		uids[string(inc.uid)] = inc
	}
	for _, sec := range secrets.Items {
		if inc := uids[sec.Labels[machines.TokenMachineUIDLabel]]; inc != nil {
			problems = append(problems, fmt.Sprintf("token %s of %s (%s, deleted %v) left", sec.Name, inc.name, inc.uid, inc.deleted))
		}
	}
	slices.Sort(problems)
	if len(problems) > 10 {
		problems = append(problems[:10], fmt.Sprintf("and %d more", len(problems)-10))
	}
	return strings.Join(problems, "; ")
}

// check checks what the run left and saw, and reports its numbers.
func (s *soak) check(took time.Duration) {
	t := s.t
	for uid, calls := range s.deletes.all() {
		for _, c := range calls {
			require.Empty(t, c.podsLeft, "DeleteMachine of machine %s at %s with pods on %s", uid, c.at, c.node)
		}
	}
	require.GreaterOrEqual(t, len(s.incarnations), 500)
	require.GreaterOrEqual(t, s.restarts, 2)
	decisions := s.checker.decisions.Load()
	d, w := s.driver, s.writes
	driverFailed := d.failed()
	t.Logf("took %s: %d decisions (%.0f a second); driver calls %d, %d failed (%.1f %%; %d carried out, their answer lost; %d false NotFound); "+
		"machine writes %d, conflicts %d injected (%.1f %%) and %d from the API server; status writes %d, %d lost (%.1f %%); %d bumps",
		took.Round(time.Millisecond), decisions, float64(decisions)/took.Seconds(),
		d.calls.Load(), driverFailed, pct(driverFailed, d.calls.Load()), d.failedAfter.Load(), d.falseNotFound.Load(),
		w.writes.Load(), w.injectedConflicts.Load(), pct(w.injectedConflicts.Load(), w.writes.Load()), w.serverConflicts.Load(),
		w.statusWrites.Load(), w.lostWrites.Load(), pct(w.lostWrites.Load(), w.statusWrites.Load()), s.bumps.Load())
	require.GreaterOrEqual(t, pct(driverFailed, d.calls.Load()), 5.0, "driver errors")
	require.GreaterOrEqual(t, pct(w.injectedConflicts.Load()+w.serverConflicts.Load(), w.writes.Load()), 1.0, "conflicts")
	require.GreaterOrEqual(t, pct(w.lostWrites.Load(), w.statusWrites.Load()), 1.0, "lost status writes")
	s.checker.requireNoViolation(t)
}

func pct(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}
