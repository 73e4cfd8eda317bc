package machines

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/lifecycle"
)

func TestObjectOfReadsWhatTheLifecycleNeeds(t *testing.T) {
	created := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	deleted := metav1.NewTime(created.Add(time.Hour))
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{
			Name: "m", UID: "uid-1", CreationTimestamp: metav1.NewTime(created), DeletionTimestamp: &deleted,
			Finalizers:      []string{lifecycle.Finalizer},
			Labels:          map[string]string{lifecycle.NodeLabel: "node-1", lifecycle.ForceDeletionLabel: "True"},
			Annotations:     map[string]string{lifecycle.PriorityAnnotation: "3", lifecycle.CreationTimeoutAnnotation: "7m"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "MachineSet", Name: "set", UID: "owner-1", Controller: ptr.To(true)}},
		},
		Spec: v1alpha1.MachineSpec{
			ProviderID: "fake:///a/vm-1", UpdateGeneration: 4, InstanceMetadata: map[string]string{"team": "a"},
			MachineConfiguration: v1alpha1.MachineConfiguration{
				MachineCreationTimeout: &metav1.Duration{Duration: time.Minute},
				MachineHealthTimeout:   &metav1.Duration{Duration: 2 * time.Minute},
				MachineDrainTimeout:    &metav1.Duration{Duration: 3 * time.Minute},
				MaxEvictRetries:        ptr.To[int32](5),
				DisableHealthTimeout:   ptr.To(true),
				NodeConditions:         ptr.To("Ready, DiskPressure,,"),
			},
		},
	}
	o, problem := objectOf(m)
	require.Equal(t, lifecycle.ProblemNone, problem)
	require.Equal(t, lifecycle.Object{
		Name: "m", UID: "uid-1", Owner: "owner-1", CreationTime: created, DeletionTime: deleted.Time,
		Finalizer: true, NodeLabel: "node-1", ProviderID: "fake:///a/vm-1", Priority: "3", ForceDeletion: true,
		UpdateGeneration: 4, Metadata: map[string]string{"team": "a"},
		Overrides: lifecycle.Overrides{CreationTimeout: 7 * time.Minute, HealthTimeout: 2 * time.Minute,
			DrainTimeout: 3 * time.Minute, MaxEvictRetries: 5, DisableHealthTimeout: true,
			NodeConditions: []string{"Ready", "DiskPressure"}},
	}, o)
}

func TestObjectOfReportsAnInvalidMachine(t *testing.T) {
	for name, m := range map[string]*v1alpha1.Machine{
		"bad annotation": {ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{lifecycle.CreationTimeoutAnnotation: "soon"}}},
		"negative timeout": {Spec: v1alpha1.MachineSpec{MachineConfiguration: v1alpha1.MachineConfiguration{
			MachineHealthTimeout: &metav1.Duration{Duration: -time.Second}}}},
	} {
		_, problem := objectOf(m)
		require.Equal(t, lifecycle.ProblemInvalidMachine, problem, name)
	}
}

func TestNodeViewReadsConditionsAndTaints(t *testing.T) {
	since := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "vm-1", Labels: map[string]string{lifecycle.MachineNameLabel: "m"}},
		Spec: corev1.NodeSpec{ProviderID: "fake:///a/vm-1", Taints: []corev1.Taint{
			{Key: lifecycle.TaintInstanceNotReady, Effect: corev1.TaintEffectNoExecute},
			{Key: lifecycle.TaintCriticalComponentsNotReady, Effect: corev1.TaintEffectPreferNoSchedule}, // not NoSchedule: ignored
			{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule},
		}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since), Reason: "KubeletReady"},
				{Type: corev1.NodeDiskPressure, Status: "Maybe"},
			},
			VolumesAttached: []corev1.AttachedVolume{{Name: "v"}},
		},
	}
	require.Equal(t, lifecycle.Node{
		Name: "vm-1", ProviderID: "fake:///a/vm-1", MachineName: "m", VolumesAttached: 1,
		Taints: lifecycle.InstanceNotReady,
		Conditions: []lifecycle.Condition{
			{Type: "Ready", Status: lifecycle.ConditionTrue, Since: lifecycle.StampOf(since), Reason: "KubeletReady"},
			{Type: "DiskPressure", Status: lifecycle.ConditionUnknown},
		},
	}, nodeView(n))
}

func TestTokenSecretIsSixteenLowerAlphanumerics(t *testing.T) {
	s := tokenSecret()
	require.Regexp(t, `^[a-z0-9]{16}$`, s)
	require.NotEqual(t, s, tokenSecret())
}
