package mcmworld

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/purelifecycle/machine/mcmcontroller/mcmfake"
)

// Kubelet plays the kubelets of a fake cloud's instances and the cloud
// controller manager that deletes the nodes of instances that are gone.
// Make one with [World.NewKubelet] or [World.StartKubelet].
//
// For every live instance of its [mcmfake.Driver], a sync registers a
// Node named Instance.NodeName with spec.providerID Instance.ProviderID,
// the instance's addresses, a capacity, and the conditions Ready=True and
// MemoryPressure, DiskPressure and PIDPressure False; it keeps the
// conditions as set (see [Kubelet.SetCondition]) and their heartbeats
// fresh. It deletes the Node of an instance that is gone (a node whose
// providerID starts with the driver's IDPrefix and names no live
// instance); MCM's machine controller puts a finalizer on its nodes, so
// such a node stays, deleting, until MCM lets it go. It writes no label
// MCM reads: MCM's machine controller labels the Machine with its node
// ("node", from the driver's answer) and the Node with its machine
// (node.gardener.cloud/machine-name) itself.
type Kubelet struct {
	w     *World
	cloud *mcmfake.Driver

	period, heartbeat, delay time.Duration
	notReady                 bool

	mu        sync.Mutex
	firstSeen map[string]time.Time // providerID: when a sync first saw the instance
	beats     map[string]time.Time // node name: the last heartbeat
	overrides map[string]map[corev1.NodeConditionType]corev1.ConditionStatus
	lastErr   error
	started   bool
}

// KubeletOption changes a [Kubelet].
type KubeletOption func(*Kubelet)

// RegisterAfter delays each node's registration by d after a sync first
// saw its instance: a VM that boots slowly.
func RegisterAfter(d time.Duration) KubeletOption { return func(k *Kubelet) { k.delay = d } }

// RegisterNotReady makes nodes register with Ready=False and stay so until
// [Kubelet.SetReady] makes them ready.
func RegisterNotReady() KubeletOption { return func(k *Kubelet) { k.notReady = true } }

// SyncEvery makes a started Kubelet sync every d (200ms by default).
func SyncEvery(d time.Duration) KubeletOption { return func(k *Kubelet) { k.period = d } }

// HeartbeatEvery makes the Kubelet renew the heartbeats of a node's
// conditions every d (2s by default); a changed condition is written at
// once.
func HeartbeatEvery(d time.Duration) KubeletOption { return func(k *Kubelet) { k.heartbeat = d } }

// NewKubelet returns a Kubelet for the instances of cloud that syncs only
// when [Kubelet.Sync] is called; [Kubelet.Start] syncs it periodically.
func (w *World) NewKubelet(cloud *mcmfake.Driver, opts ...KubeletOption) *Kubelet {
	k := &Kubelet{w: w, cloud: cloud, period: 200 * time.Millisecond, heartbeat: 2 * time.Second,
		firstSeen: map[string]time.Time{}, beats: map[string]time.Time{},
		overrides: map[string]map[corev1.NodeConditionType]corev1.ConditionStatus{}}
	for _, o := range opts {
		o(k)
	}
	return k
}

// StartKubelet returns a started Kubelet for the instances of cloud.
func (w *World) StartKubelet(cloud *mcmfake.Driver, opts ...KubeletOption) *Kubelet {
	w.t.Helper()
	k := w.NewKubelet(cloud, opts...)
	k.Start()
	return k
}

// Start syncs the Kubelet in a goroutine, periodically, until the test
// ends. A Kubelet starts once; a second Start does nothing.
func (k *Kubelet) Start() {
	k.mu.Lock()
	if k.started {
		k.mu.Unlock()
		return
	}
	k.started = true
	k.mu.Unlock()
	ctx, cancel := context.WithCancel(k.w.Ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(k.period)
		defer tick.Stop()
		for {
			if err := k.sync(ctx); err != nil && ctx.Err() == nil {
				k.mu.Lock()
				k.lastErr = err
				k.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	k.w.t.Cleanup(func() {
		cancel()
		<-done
	})
}

// LastError returns the last error of a sync of the started Kubelet that
// was not a conflict, nil when there was none.
func (k *Kubelet) LastError() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lastErr
}

// SetCondition makes the node report the condition typ with status from
// the next sync on, whatever it reported before: Ready=False for a node
// that went NotReady, KernelDeadlock=True for one MCM's machine controller
// counts unhealthy (as it does every condition of its --node-conditions
// that is not False).
func (k *Kubelet) SetCondition(node string, typ corev1.NodeConditionType, status corev1.ConditionStatus) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.overrides[node] == nil {
		k.overrides[node] = map[corev1.NodeConditionType]corev1.ConditionStatus{}
	}
	k.overrides[node][typ] = status
}

// SetReady sets the node's Ready condition: True when ready, else False.
func (k *Kubelet) SetReady(node string, ready bool) {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	k.SetCondition(node, corev1.NodeReady, status)
}

// Sync registers the nodes of new instances (those whose registration
// delay has passed), writes changed conditions and due heartbeats, and
// deletes the nodes of instances that are gone. It returns the errors
// other than conflicts, which the next sync retries.
func (k *Kubelet) Sync() error {
	return k.sync(k.w.Ctx)
}

// sync is Sync with its own context.
func (k *Kubelet) sync(ctx context.Context) error {
	nodes, err := k.w.Core.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	byName := map[string]*corev1.Node{}
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	now := time.Now()
	live := map[string]bool{}
	var errs []error
	for _, inst := range k.cloud.Instances() {
		live[inst.ProviderID] = true
		n, ok := byName[inst.NodeName]
		if !ok {
			if k.due(inst.ProviderID, now) {
				errs = append(errs, k.register(ctx, inst, now))
			}
			continue
		}
		if n.DeletionTimestamp == nil && n.Spec.ProviderID == inst.ProviderID {
			errs = append(errs, k.report(ctx, n, now))
		}
	}
	for _, n := range nodes.Items {
		if n.DeletionTimestamp != nil || !strings.HasPrefix(n.Spec.ProviderID, k.cloud.IDPrefix) || live[n.Spec.ProviderID] {
			continue
		}
		if err := k.w.Core.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting node %s of a gone instance: %w", n.Name, err))
		}
	}
	var out []error
	for _, err := range errs {
		if err != nil && !apierrors.IsConflict(err) {
			out = append(out, err)
		}
	}
	return errors.Join(out...)
}

// due reports whether the node of the instance is to register now: its
// registration delay has passed since a sync first saw it.
func (k *Kubelet) due(providerID string, now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	first, ok := k.firstSeen[providerID]
	if !ok {
		first = now
		k.firstSeen[providerID] = now
	}
	return now.Sub(first) >= k.delay
}

// register creates the instance's node and reports its status.
func (k *Kubelet) register(ctx context.Context, inst mcmfake.Instance, now time.Time) error {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: inst.NodeName, Labels: map[string]string{
			corev1.LabelHostname: inst.NodeName, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}},
		Spec: corev1.NodeSpec{ProviderID: inst.ProviderID},
	}
	created, err := k.w.Core.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("registering node %s: %w", inst.NodeName, err)
	}
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	created.Status.Capacity, created.Status.Allocatable = capacity, capacity
	created.Status.Addresses = append(append([]corev1.NodeAddress(nil), inst.Addresses...),
		corev1.NodeAddress{Type: corev1.NodeHostName, Address: inst.NodeName})
	created.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.34.0", OperatingSystem: "linux", Architecture: "amd64"}
	return k.report(ctx, created, now)
}

// report writes the node's conditions when they differ from what the
// node is to report, or its heartbeat is due.
func (k *Kubelet) report(ctx context.Context, n *corev1.Node, now time.Time) error {
	want := k.conditions(n.Name)
	k.mu.Lock()
	beatDue := now.Sub(k.beats[n.Name]) >= k.heartbeat
	k.mu.Unlock()
	have := map[corev1.NodeConditionType]corev1.NodeCondition{}
	for _, c := range n.Status.Conditions {
		have[c.Type] = c
	}
	mine := map[corev1.NodeConditionType]bool{}
	for _, c := range want {
		mine[c.typ] = true
	}
	changed := false
	conds := make([]corev1.NodeCondition, 0, len(n.Status.Conditions)+len(want))
	for _, c := range want {
		old, ok := have[c.typ]
		transition := metav1.NewTime(now)
		if ok && old.Status == c.status {
			transition = old.LastTransitionTime
		} else {
			changed = true
		}
		conds = append(conds, corev1.NodeCondition{Type: c.typ, Status: c.status, Reason: c.reason, Message: c.message,
			LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: transition})
	}
	for _, c := range n.Status.Conditions {
		// A kubelet writes its own conditions, first, and keeps those
		// others write (Terminating, InPlaceUpdate, Preserved).
		if !mine[c.Type] {
			conds = append(conds, c)
		}
	}
	if !changed && !beatDue {
		return nil
	}
	n = n.DeepCopy()
	n.Status.Conditions = conds
	if _, err := k.w.Core.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reporting the status of node %s: %w", n.Name, err)
	}
	k.mu.Lock()
	k.beats[n.Name] = now
	k.mu.Unlock()
	return nil
}

// condition is one condition a node is to report.
type condition struct {
	typ             corev1.NodeConditionType
	status          corev1.ConditionStatus
	reason, message string
}

// conditions returns the conditions the node is to report: a kubelet's
// four, as set by the options and SetCondition, and any other
// SetCondition added, by type.
func (k *Kubelet) conditions(node string) []condition {
	k.mu.Lock()
	defer k.mu.Unlock()
	ready := corev1.ConditionTrue
	if k.notReady {
		ready = corev1.ConditionFalse
	}
	out := []condition{
		{corev1.NodeReady, ready, "", ""},
		{corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
		{corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
		{corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
	}
	over := k.overrides[node]
	seen := map[corev1.NodeConditionType]bool{}
	for i := range out {
		seen[out[i].typ] = true
		if s, ok := over[out[i].typ]; ok {
			out[i].status = s
		}
	}
	var extra []condition
	for typ, s := range over {
		if !seen[typ] {
			extra = append(extra, condition{typ, s, "SetByTest", "set by the test through mcmworld.Kubelet"})
		}
	}
	slices.SortFunc(extra, func(a, b condition) int { return strings.Compare(string(a.typ), string(b.typ)) })
	for i := range out {
		if out[i].typ == corev1.NodeReady {
			out[i].reason, out[i].message = "KubeletReady", "kubelet is posting ready status"
			if out[i].status != corev1.ConditionTrue {
				out[i].reason, out[i].message = "KubeletNotReady", "container runtime network not ready"
			}
		} else if _, ok := over[out[i].typ]; ok {
			out[i].reason, out[i].message = "SetByTest", "set by the test through mcmworld.Kubelet"
		}
	}
	return append(out, extra...)
}
