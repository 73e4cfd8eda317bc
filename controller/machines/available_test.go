package machines

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/controller/fakecloud"
	"github.com/purelifecycle/machine/lifecycle"
)

// A controller without a target cluster makes its machines Available and
// records MachineAvailable: the one declared event the envtest scenarios,
// whose controller has a target cluster, cannot reach (see
// cmd/manager/events_envtest_test.go). The passes run against a fake
// client.
func TestMachineWithoutTargetClusterBecomesAvailable(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m-avail", UID: "uid-avail"},
		Spec: v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Name: "plain"}}}
	class := &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(m, class).
		WithStatusSubresource(&v1alpha1.Machine{})
	for _, ix := range cacheIndexes() {
		b = b.WithIndex(ix.obj, ix.field, ix.fn)
	}
	c := b.Build()
	rec := events.NewFakeRecorder(100)
	cfg := lifecycle.DefaultConfig()
	cfg.NoTargetCluster = true
	r, err := newReconciler(c, c, Options{Driver: fakecloud.New(), Config: &cfg})
	require.NoError(t, err)
	r.recorder = rec

	ctx := context.Background()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)}
	got := &v1alpha1.Machine{}
	for pass := 0; pass < 5 && got.Status.CurrentStatus.Phase != "Available"; pass++ {
		_, err := r.Reconcile(ctx, req)
		require.NoError(t, err)
		require.NoError(t, c.Get(ctx, req.NamespacedName, got))
	}
	require.Equal(t, "Available", got.Status.CurrentStatus.Phase)
	evs := reasons(recorded(rec))
	// Each event once: the lifecycle's effects, none recorded again by the
	// reconciler.
	count := map[string]int{}
	for _, e := range evs {
		count[e]++
	}
	require.Equal(t, 1, count["Normal MachineAvailable"], "%v", evs)
	require.Equal(t, 1, count["Normal InstanceCreated"], "%v", evs)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	require.NotNil(t, ready)
	require.Equal(t, metav1.ConditionTrue, ready.Status)
}
