package mcm

import (
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/purelifecycle/machine/lifecycle"
)

func TestObjectFrom(t *testing.T) {
	deleted := metav1.NewTime(time.Date(2026, 8, 19, 10, 0, 0, 0, time.UTC))
	m := newMachine()
	m.DeletionTimestamp = &deleted
	m.Finalizers = []string{"other", lifecycle.Finalizer}
	m.OwnerReferences = []metav1.OwnerReference{
		{Kind: "MachineDeployment", Name: "worker", UID: "not-the-controller"},
		{Kind: "MachineSet", Name: "worker-abc", UID: "ms-uid", Controller: ptr.To(true)},
	}
	m.Labels = map[string]string{lifecycle.NodeLabel: "node-1", lifecycle.ForceDeletionLabel: "True"}
	m.Annotations = map[string]string{lifecycle.PriorityAnnotation: "1", lifecycle.CreationTimeoutAnnotation: "45m"}
	m.Spec.ProviderID = "aws:///eu-west-1/i-1"
	m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{
		MachineDrainTimeout:    &metav1.Duration{Duration: time.Hour},
		MachineHealthTimeout:   &metav1.Duration{Duration: 15 * time.Minute},
		MachineCreationTimeout: &metav1.Duration{Duration: 30 * time.Minute},
		MaxEvictRetries:        ptr.To[int32](30),
		DisableHealthTimeout:   ptr.To(true),
		NodeConditions:         ptr.To("KernelDeadlock,,ReadonlyFilesystem, DiskPressure"),
	}
	require.Equal(t, lifecycle.Object{
		Name: "m-1", UID: "uid-1", Owner: "ms-uid",
		CreationTime: m.CreationTimestamp.Time, DeletionTime: deleted.Time,
		Finalizer: true, NodeLabel: "node-1", ProviderID: "aws:///eu-west-1/i-1", Priority: "1", ForceDeletion: true,
		Overrides: lifecycle.Overrides{
			CreationTimeout: 45 * time.Minute, // the annotation wins
			HealthTimeout:   15 * time.Minute, DrainTimeout: time.Hour, MaxEvictRetries: 30, DisableHealthTimeout: true,
			NodeConditions: []string{"KernelDeadlock", "ReadonlyFilesystem", " DiskPressure"}, // split as MCM splits
		},
	}, ObjectFrom(m))
}

func TestObjectFromDefaults(t *testing.T) {
	require.Equal(t, lifecycle.Object{Name: "m-1", UID: "uid-1", CreationTime: newMachine().CreationTimestamp.Time},
		ObjectFrom(newMachine()), "no owner, finalizer, labels, annotations or configuration")
	require.Equal(t, lifecycle.Object{}, ObjectFrom(nil), "a machine that is gone")
}

func TestObjectFromForceDeletionLabel(t *testing.T) {
	for value, want := range map[string]bool{"true": true, "True": true, "1": true, "t": true,
		"false": false, "yes": false, "": false, "TRUE ": false} {
		m := newMachine()
		m.Labels = map[string]string{lifecycle.ForceDeletionLabel: value}
		require.Equal(t, want, ObjectFrom(m).ForceDeletion, "%q", value)
	}
}

func TestObjectFromCreationTimeout(t *testing.T) {
	spec := &v1alpha1.MachineConfiguration{MachineCreationTimeout: &metav1.Duration{Duration: 30 * time.Minute}}
	for _, tt := range []struct {
		annotation *string
		want       time.Duration
	}{
		{nil, 30 * time.Minute},
		{ptr.To("1h"), time.Hour},
		{ptr.To("soon"), 30 * time.Minute},
		{ptr.To("0s"), 30 * time.Minute},
		{ptr.To("-5m"), 30 * time.Minute},
	} {
		m := newMachine()
		m.Spec.MachineConfiguration = spec
		if tt.annotation != nil {
			m.Annotations = map[string]string{lifecycle.CreationTimeoutAnnotation: *tt.annotation}
		}
		require.Equal(t, tt.want, ObjectFrom(m).Overrides.CreationTimeout)
	}
}

func TestObjectFromNodeConditions(t *testing.T) {
	for text, want := range map[string][]string{
		"":                                  {}, // explicitly none: only Ready counts
		",":                                 {},
		"KernelDeadlock":                    {"KernelDeadlock"},
		"KernelDeadlock,NetworkUnavailable": {"KernelDeadlock", "NetworkUnavailable"},
	} {
		m := newMachine()
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{NodeConditions: ptr.To(text)}
		got := ObjectFrom(m).Overrides.NodeConditions
		require.NotNil(t, got, "%q", text)
		require.Equal(t, want, got, "%q", text)
	}
	m := newMachine()
	m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{}
	require.Nil(t, ObjectFrom(m).Overrides.NodeConditions, "unset: the Config's list")
}

func TestNodeFrom(t *testing.T) {
	since := time.Date(2026, 8, 19, 9, 0, 0, 0, time.UTC)
	deleted := metav1.NewTime(since)
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", DeletionTimestamp: &deleted,
			Labels: map[string]string{lifecycle.MachineNameLabel: "m-1"}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///eu-west-1/i-1", Taints: []corev1.Taint{
			{Key: lifecycle.TaintCriticalComponentsNotReady, Effect: corev1.TaintEffectNoSchedule},
			{Key: lifecycle.TaintInstanceNotReady, Effect: corev1.TaintEffectNoExecute},
			{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule},
		}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(since.Add(time.Hour)),
					LastTransitionTime: metav1.NewTime(since), Reason: "KubeletReady", Message: "kubelet is posting ready status"},
				{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse},
				{Type: "KernelDeadlock", Status: "Maybe"},
			},
			VolumesAttached: []corev1.AttachedVolume{{Name: "a"}, {Name: "b"}},
		},
	}
	require.Equal(t, lifecycle.Node{
		Name: "node-1", ProviderID: "aws:///eu-west-1/i-1", MachineName: "m-1",
		Conditions: []lifecycle.Condition{
			{Type: "Ready", Status: lifecycle.ConditionTrue, Since: lifecycle.StampOf(since), Reason: "KubeletReady", Message: "kubelet is posting ready status"},
			{Type: "DiskPressure", Status: lifecycle.ConditionFalse},
			{Type: "KernelDeadlock", Status: lifecycle.ConditionUnknown}, // unknown text counts as unhealthy
		},
		Taints:          lifecycle.CriticalComponentsNotReady | lifecycle.InstanceNotReady,
		Deleting:        true,
		VolumesAttached: 2,
	}, NodeFrom(n))
}

func TestNodeFromTaintEffects(t *testing.T) {
	n := &corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{
		{Key: lifecycle.TaintCriticalComponentsNotReady, Effect: corev1.TaintEffectPreferNoSchedule},
	}}}
	require.Equal(t, lifecycle.Taints(0), NodeFrom(n).Taints, "only NoSchedule keeps a Pending machine from Running")
	require.Equal(t, lifecycle.Node{}, NodeFrom(nil))
}
