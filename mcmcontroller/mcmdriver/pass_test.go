package mcmdriver_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/codes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/examples/memworld"
	"github.com/purelifecycle/machine/examples/shell"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/lifecycle/pass"
	"github.com/purelifecycle/machine/mcmcontroller/mcmdriver"
	"github.com/purelifecycle/machine/mcmcontroller/mcmfake"
	"github.com/purelifecycle/machine/mcmcontroller/options"
	"github.com/purelifecycle/machine/phase"
)

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

// rules records the rule of every decision.
type rules []lifecycle.Rule

func (r *rules) Decided(_ *lifecycle.Input, d *lifecycle.Decision) { *r = append(*r, d.Rule) }

func (r rules) String() string {
	var b strings.Builder
	for _, x := range r {
		b.WriteString(x.String() + " ")
	}
	return b.String()
}

// kubelet plays the nodes of the fake cloud's instances in the cluster: an
// initialized instance registers its node NotReady, with the startup
// taint, and the node turns Ready a minute later.
type kubelet struct {
	registered map[string]time.Time
}

func (k *kubelet) tick(c *memworld.Cluster, cloud *mcmfake.Driver, now time.Time) {
	for _, i := range cloud.Instances() {
		if !i.Initialized {
			continue
		}
		n, ok := c.Nodes[i.NodeName]
		if !ok {
			if _, seen := k.registered[i.NodeName]; seen {
				continue // deleted by the lifecycle: the instance is going
			}
			k.registered[i.NodeName] = now
			c.Nodes[i.NodeName] = &memworld.Node{Node: lifecycle.Node{Name: i.NodeName, ProviderID: i.ProviderID,
				Taints: lifecycle.InstanceNotReady, Conditions: []lifecycle.Condition{
					{Type: lifecycle.ConditionReady, Status: lifecycle.ConditionFalse, Since: lifecycle.StampOf(now)}}},
				Labels: map[string]string{}, Finalizer: true}
			continue
		}
		if now.Sub(k.registered[i.NodeName]) >= time.Minute && n.Conditions[0].Status != lifecycle.ConditionTrue {
			n.Conditions = []lifecycle.Condition{{Type: lifecycle.ConditionReady, Status: lifecycle.ConditionTrue, Since: lifecycle.StampOf(now)}}
		}
	}
}

// One machine from nothing to Running and back to nothing, decided by the
// lifecycle through pass.Run, with an MCM provider (the fake cloud, which
// needs InitializeMachine and refuses the first CreateMachine) behind For
// and the controller's MCM objects handed to it at every pass; the test
// plays the machine's node.
func TestAMachineThroughItsLifecycleWithAnMCMProvider(t *testing.T) {
	o := options.New()
	checked, err := o.Config().Check() // MCM's defaults, VerifyOwner off
	if err != nil {
		t.Fatal(err)
	}
	cloud := mcmfake.New()
	cloud.NeedsInit = true
	cloud.FailNext(mcmfake.MethodCreate, "worker-a-1", codes.Unavailable)
	// The cluster holds the machine and the nodes; its own provider stays
	// empty, the instances are the fake cloud's.
	c := memworld.NewCluster(lifecycletest.NewProvider(), "worker-a-1", "uid-1", t0)
	c.NoNodes = true
	objs := mcmdriver.Objects{
		Machine: &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--p", Name: "worker-a-1", UID: "uid-1"}},
		Class: &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--p", Name: "class-a"},
			ProviderSpec: runtime.RawExtension{Raw: []byte(`{"size":"small"}`)}, Provider: "mcmfake"},
		Secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--p", Name: "secret-a"}},
	}
	class := driverapi.Class{Name: "class-a", ProviderSpec: []byte(`{"size":"small"}`),
		Secret: map[string][]byte{"userData": []byte("#!/bin/sh")}}
	k := &kubelet{registered: map[string]time.Time{}}
	var scratch pass.Scratch
	var seen rules
	now := t0
	passUntil := func(done func() bool) {
		t.Helper()
		for range 50 {
			k.tick(c, cloud, now)
			sh := &shell.Shell{World: c, Driver: mcmdriver.For(cloud, objs), Class: class}
			r := pass.Run(context.Background(), &checked, sh, now, &scratch, &seen)
			if r.Err != nil {
				t.Fatalf("pass at +%s: %v (rules %s)", now.Sub(t0), r.Err, seen)
			}
			if done() {
				return
			}
			now = now.Add(r.Requeue)
		}
		t.Fatalf("not done after 50 passes: phase %s, rules %s, calls %+v", c.Machine.Status.Phase, seen, cloud.Calls())
	}

	passUntil(func() bool {
		return c.Machine.Status.Phase == phase.Running && scratch.Decision.Rule == lifecycle.RuleHealthy
	})
	is := cloud.Instances()
	if len(is) != 1 {
		t.Fatalf("instances %+v", is)
	}
	st := c.Machine.Status
	if st.ProviderID != is[0].ProviderID || st.NodeName != is[0].NodeName || is[0].Class != "class-a" || is[0].MachineUID != "uid-1" {
		t.Errorf("status %s %s, instance %+v", st.ProviderID, st.NodeName, is[0])
	}
	if n := c.Nodes[is[0].NodeName]; n.Taints.Has(lifecycle.InstanceNotReady) || n.Labels[lifecycle.MachineNameLabel] != "worker-a-1" {
		t.Errorf("node %+v", n)
	}
	if cloud.Count(mcmfake.MethodCreate, "") != 2 || cloud.Count(mcmfake.MethodInitialize, "") != 1 {
		t.Errorf("calls %+v", cloud.Calls())
	}
	if !slices.Contains(seen, lifecycle.RuleCreateTransient) || !slices.Contains(seen, lifecycle.RuleCreateCreated) {
		t.Errorf("the refused creation was not retried: rules %s", seen)
	}
	for _, call := range cloud.Calls() {
		if call.Method == mcmfake.MethodInitialize && call.ProviderID != st.ProviderID {
			t.Errorf("InitializeMachine without the instance: %+v", call)
		}
	}

	c.Delete(now)
	passUntil(func() bool { return c.Machine.Gone })
	if len(cloud.Instances()) != 0 || len(c.Nodes) != 0 {
		t.Errorf("left behind: instances %+v, nodes %v", cloud.Instances(), c.Nodes)
	}
	calls := cloud.Calls()
	if last := calls[len(calls)-1]; last.Method != mcmfake.MethodDelete || last.ProviderID != st.ProviderID || last.Code != codes.OK {
		t.Errorf("the last call was not the instance's deletion: %+v", calls)
	}
	if !slices.Contains(seen, lifecycle.RuleDeleteVMDeleted) {
		t.Errorf("rules %s", seen)
	}
}

// The project's in-memory provider seen through MCM's interface and back,
// For(ToMCM(p)), drives a machine through its lifecycle as p does alone:
// one instance, Running, then deleted with its node.
func TestAMachineThroughItsLifecycleOverBothAdapters(t *testing.T) {
	checked, err := options.New().Config().Check()
	if err != nil {
		t.Fatal(err)
	}
	p := memworld.NewProvider()
	p.FailNext(driverapi.MethodInitialize, lifecycletest.Fault{Code: driverapi.Internal, Message: "no network yet"}, 1)
	c := memworld.NewCluster(p, "worker-b-1", "uid-b", t0)
	d := mcmdriver.For(mcmdriver.ToMCM(p), mcmdriver.Objects{})
	var scratch pass.Scratch
	now := t0
	run := func(done func() bool) {
		t.Helper()
		for range 50 {
			c.Tick(now)
			r := pass.Run(context.Background(), &checked, &shell.Shell{World: c, Driver: d, Class: driverapi.Class{Name: "mem"}}, now, &scratch, nil)
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if done() {
				return
			}
			now = now.Add(r.Requeue)
		}
		t.Fatalf("not done after 50 passes: phase %s, last rule %s", c.Machine.Status.Phase, scratch.Decision.Rule)
	}
	run(func() bool {
		return c.Machine.Status.Phase == phase.Running && scratch.Decision.Rule == lifecycle.RuleHealthy
	})
	if p.Created != 1 || c.Machine.Status.ProviderID != p.Instances()[0].ProviderID {
		t.Fatalf("%d instances created, status %+v", p.Created, c.Machine.Status)
	}
	c.Delete(now)
	run(func() bool { return c.Machine.Gone })
	if len(p.Instances()) != 0 || len(c.Nodes) != 0 {
		t.Errorf("left behind: %d instances, %d nodes", len(p.Instances()), len(c.Nodes))
	}
}
