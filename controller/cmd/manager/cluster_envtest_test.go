package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/controller/fakecloud"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
)

// What the drain and soak tests play of a cluster that envtest does not
// run: the kubelets (nodes registered for the instances, pods that were
// evicted or deleted actually going), the disruption controller (a
// PodDisruptionBudget's status, which the eviction API consults), and a
// record of the provider's DeleteMachine calls with the pods their node
// still held. The checker sees every decision of the controller.

// checker is an observer of decisions (Options.Observer) that checks each
// with lifecycletest.Check and counts them by machine and rule, from every
// worker at once.
type checker struct {
	cfg       lifecycle.Config
	decisions atomic.Int64

	mu         sync.Mutex
	violations []string
	broken     int
	rules      map[machineRule]int
	required   bool // requireNoViolation ran
}

// machineRule is a machine's name and a rule.
type machineRule struct {
	machine string
	rule    lifecycle.Rule
}

func newChecker(cfg lifecycle.Config) *checker {
	return &checker{cfg: cfg, rules: map[machineRule]int{}}
}

// Decided implements pass.Observer.
func (c *checker) Decided(in *lifecycle.Input, d *lifecycle.Decision) {
	c.decisions.Add(1)
	err := lifecycletest.Check(&c.cfg, in, d)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rules[machineRule{in.Object.Name, d.Rule}]++
	if err != nil {
		c.broken++
		if len(c.violations) < 20 {
			c.violations = append(c.violations, fmt.Sprintf("%s (uid %s) at phase %s stage %s: %v",
				in.Object.Name, in.Object.UID, in.Status.Phase.Label(), in.Status.Stage, err))
		}
	}
}

// count returns how many decisions about the machine had rule.
func (c *checker) count(machine string, rule lifecycle.Rule) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rules[machineRule{machine, rule}]
}

// requireNoViolation fails the test with the promises broken.
func (c *checker) requireNoViolation(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.required = true
	require.Positive(t, c.decisions.Load(), "the checker saw no decision")
	require.Zero(t, c.broken, "%d decisions broke the lifecycle's promises; the first ones:\n%s", c.broken, joinLines(c.violations))
}

// reportOnFailure reports the promises broken, if any, when the test
// fails before it checks them, so that a failure shows them too.
func (c *checker) reportOnFailure(t *testing.T) {
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.Failed() && !c.required && c.broken > 0 {
			t.Errorf("%d decisions broke the lifecycle's promises; the first ones:\n%s", c.broken, joinLines(c.violations))
		}
	})
}

func joinLines(lines []string) string {
	out := ""
	for _, l := range lines {
		out += "  " + l + "\n"
	}
	return out
}

// nodeKubelet plays the kubelets of a provider's instances: every interval
// it registers, once, the node of each initialized instance whose machine
// the test has not asked to delete (requestDeletion), Ready and with the
// startup taint. Once deletion is asked the instance's kubelet does not
// register any more, as a VM being torn down does not join; so a node
// exists only if it was registered before the deletion began.
type nodeKubelet struct {
	p        *fakecloud.Provider
	interval time.Duration

	mu         sync.Mutex
	registered map[string]bool    // by providerID
	deleting   map[types.UID]bool // machines whose deletion the test asked
}

func newNodeKubelet(p *fakecloud.Provider, interval time.Duration) *nodeKubelet {
	return &nodeKubelet{p: p, interval: interval, registered: map[string]bool{}, deleting: map[types.UID]bool{}}
}

// start runs the kubelets until the test ends.
func (k *nodeKubelet) start(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(k.interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for _, inst := range k.p.Instances() {
				if inst.Initialized {
					k.register(ctx, t, inst)
				}
			}
		}
	}()
}

// register registers the instance's node unless it did already or its
// machine is being deleted.
func (k *nodeKubelet) register(ctx context.Context, t *testing.T, inst fakecloud.Instance) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.registered[inst.ProviderID] || k.deleting[types.UID(inst.OwnerUID)] {
		return
	}
	if err := fakecloud.RegisterNode(ctx, k8s, inst); err != nil {
		if ctx.Err() == nil {
			t.Logf("kubelet: registering %s: %v", inst.NodeName, err)
		}
		return
	}
	k.registered[inst.ProviderID] = true
}

// requestDeletion deletes the machine, as its owner does; from then on the
// kubelet registers no node for it.
func (k *nodeKubelet) requestDeletion(ctx context.Context, m *v1alpha1.Machine) error {
	k.mu.Lock()
	k.deleting[m.UID] = true
	k.mu.Unlock()
	err := k8s.Delete(ctx, m, client.Preconditions{UID: &m.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone already, or another incarnation
	}
	return err
}

// unlessDeleting calls f, unless the test asked the deletion of the
// machine of that UID, before any deletion of it is asked: as a scheduler
// places no pod on a node being drained.
func (k *nodeKubelet) unlessDeleting(uid types.UID, f func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.deleting[uid] {
		f()
	}
}

// podReaper plays what removes the pods of a namespace once they are
// deleted: without kubelets an evicted pod keeps its deletion timestamp for
// ever; the reaper deletes it at once (grace period 0) and records when.
type podReaper struct {
	ns string

	mu   sync.Mutex
	gone map[string]time.Time // by pod name
}

// startPodReaper starts the reaper of the namespace's terminating pods
// until the test ends.
func startPodReaper(t *testing.T, ns string, interval time.Duration) *podReaper {
	r := &podReaper{ns: ns, gone: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			r.reap(ctx, t)
		}
	}()
	return r
}

func (r *podReaper) reap(ctx context.Context, t *testing.T) {
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(r.ns)); err != nil {
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil {
			continue
		}
		err := k8s.Delete(ctx, p, client.GracePeriodSeconds(0), client.Preconditions{UID: &p.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			if ctx.Err() == nil {
				t.Logf("reaper: deleting pod %s: %v", p.Name, err)
			}
			continue
		}
		r.mu.Lock()
		r.gone[p.Name] = time.Now()
		r.mu.Unlock()
	}
}

// goneAt returns when the reaper removed the pod.
func (r *podReaper) goneAt(pod string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.gone[pod]
	return at, ok
}

// appLabel labels the pods of the tests' workloads.
const appLabel = "test.purelifecycle.dev/app"

// newPod creates a Running, Ready pod of app bound to node, controlled by
// a ReplicaSet (or by a DaemonSet when daemon is set), as a scheduler and
// a kubelet would leave it. A pod that is Pending or not Ready would not
// count for a disruption budget: the eviction API lets it go.
func newPod(t *testing.T, ns, name, app, node string, daemon bool) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	kind := "ReplicaSet"
	if daemon {
		kind = "DaemonSet"
	}
	yes := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{appLabel: app},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: app,
				UID: types.UID("uid-of-" + app), Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
	}
	require.NoError(t, k8s.Create(ctx, p))
	now := metav1.Now()
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now, Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}}
	require.NoError(t, k8s.Status().Update(ctx, p))
	return p
}

// newBudget creates a PodDisruptionBudget over the pods of app that allows
// no disruption, with the status a disruption controller would write for
// its healthy pods.
func newBudget(t *testing.T, ns, app string, healthy int32) *policyv1.PodDisruptionBudget {
	t.Helper()
	ctx := context.Background()
	minAvailable := intstr.FromInt32(healthy)
	b := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{appLabel: app}}},
	}
	require.NoError(t, k8s.Create(ctx, b))
	b.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: b.Generation, DisruptionsAllowed: 0,
		CurrentHealthy: healthy, DesiredHealthy: healthy, ExpectedPods: healthy}
	require.NoError(t, k8s.Status().Update(ctx, b))
	return b
}

// allowDisruptions writes the budget's status as a disruption controller
// would once it allows n disruptions.
func allowDisruptions(t *testing.T, ns, name string, n int32) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		b := &policyv1.PodDisruptionBudget{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
			return err
		}
		b.Status.ObservedGeneration = b.Generation
		b.Status.DisruptionsAllowed = n
		b.Status.DesiredHealthy = b.Status.CurrentHealthy - n
		return k8s.Status().Update(ctx, b)
	}))
}

// podsOn returns the pods bound to node that a drain removes: not those of
// a DaemonSet, not those that ended.
func podsOn(ctx context.Context, node string) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := k8s.List(ctx, &list, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "DaemonSet" {
			continue
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// deleteCall is a DeleteMachine the provider was asked, with what the
// node of its instance held at that moment.
type deleteCall struct {
	at       time.Time
	node     string
	podsLeft []string // the pods a drain removes, read from the API server
}

// deleteRecorder records every DeleteMachine a driver is asked for an
// existing instance, by the machine's UID, with the pods still bound to
// the instance's node when it is asked.
type deleteRecorder struct {
	p *fakecloud.Provider

	mu    sync.Mutex
	calls map[string][]deleteCall
}

func newDeleteRecorder(p *fakecloud.Provider) *deleteRecorder {
	return &deleteRecorder{p: p, calls: map[string][]deleteCall{}}
}

// record notes a DeleteMachine of req's instance, before it is carried
// out.
func (d *deleteRecorder) record(ctx context.Context, req *driverapi.DeleteMachineRequest) {
	node := ""
	for _, inst := range d.p.Instances() {
		if inst.ProviderID == req.Machine.ProviderID || req.Machine.ProviderID == "" && inst.OwnerUID == req.Machine.UID {
			node = inst.NodeName
		}
	}
	if node == "" {
		return // no instance: nothing is deleted
	}
	c := deleteCall{at: time.Now(), node: node}
	pods, err := podsOn(ctx, node)
	if err != nil {
		c.podsLeft = []string{"(listing the pods failed: " + err.Error() + ")"}
	}
	for _, p := range pods {
		c.podsLeft = append(c.podsLeft, p.Name)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls[req.Machine.UID] = append(d.calls[req.Machine.UID], c)
}

// of returns the DeleteMachine calls recorded for the machine UID.
func (d *deleteRecorder) of(uid types.UID) []deleteCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]deleteCall(nil), d.calls[string(uid)]...)
}

// all returns every recorded call, by machine UID.
func (d *deleteRecorder) all() map[string][]deleteCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string][]deleteCall, len(d.calls))
	for k, v := range d.calls {
		out[k] = append([]deleteCall(nil), v...)
	}
	return out
}

// recordingDriver is the fake provider with its DeleteMachine calls
// recorded (deleteRecorder).
type recordingDriver struct {
	*fakecloud.Provider
	deletes *deleteRecorder
}

// DeleteMachine records the call, then deletes.
func (d *recordingDriver) DeleteMachine(ctx context.Context, req *driverapi.DeleteMachineRequest) (*driverapi.DeleteMachineResponse, error) {
	d.deletes.record(ctx, req)
	return d.Provider.DeleteMachine(ctx, req)
}
