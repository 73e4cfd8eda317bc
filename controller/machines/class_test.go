package machines

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// Each way a class cannot be used is the problem the lifecycle decides on;
// a usable one is what the driver is handed.
func TestReadClassReportsEachProblem(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	good := &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "good"},
		ProviderSpec: runtime.RawExtension{Raw: []byte(`{"size":"s"}`)},
		SecretRef:    &corev1.LocalObjectReference{Name: "creds"},
		NodeTemplate: &v1alpha1.NodeTemplate{InstanceType: "s", Region: "r", Zone: "z",
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}
	noSecret := &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "no-secret"},
		SecretRef: &corev1.LocalObjectReference{Name: "gone"}}
	badTemplate := &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bad-template"},
		NodeTemplate: &v1alpha1.NodeTemplate{InstanceType: "s"}}
	flaky := &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "flaky"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"key": []byte("k")}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(good, noSecret, badTemplate, flaky, secret).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if key.Name == "flaky" {
				return errors.New("connection refused")
			}
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	r := &Reconciler{client: c, reader: c}

	for _, tc := range []struct {
		ref  v1alpha1.ClassSpec
		want lifecycle.Problem
	}{
		{v1alpha1.ClassSpec{Name: "good"}, lifecycle.ProblemNone},
		{v1alpha1.ClassSpec{Kind: "MachineClass", APIGroup: "machine.purelifecycle.dev", Name: "good"}, lifecycle.ProblemNone},
		{v1alpha1.ClassSpec{}, lifecycle.ProblemInvalidMachine},
		{v1alpha1.ClassSpec{Kind: "AWSMachineClass", Name: "good"}, lifecycle.ProblemInvalidMachine},
		{v1alpha1.ClassSpec{APIGroup: "machine.sapcloud.io", Name: "good"}, lifecycle.ProblemInvalidMachine},
		{v1alpha1.ClassSpec{Name: "missing"}, lifecycle.ProblemClassUnavailable},
		{v1alpha1.ClassSpec{Name: "no-secret"}, lifecycle.ProblemClassUnavailable},
		{v1alpha1.ClassSpec{Name: "bad-template"}, lifecycle.ProblemInvalidNodeTemplate},
		{v1alpha1.ClassSpec{Name: "flaky"}, lifecycle.ProblemClassNotReady},
	} {
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}, Spec: v1alpha1.MachineSpec{Class: tc.ref}}
		got := r.readClass(context.Background(), m)
		require.Equal(t, tc.want, got.problem, "%+v: %v", tc.ref, got.err)
		if tc.want != lifecycle.ProblemNone {
			require.Error(t, got.err)
			continue
		}
		require.Equal(t, driverapi.Class{Name: "good", ProviderSpec: []byte(`{"size":"s"}`), Secret: secret.Data}, got.class)
	}

	// A pass reads the class once.
	reads := 0
	counting := fake.NewClientBuilder().WithScheme(scheme).WithObjects(good, secret).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	r = &Reconciler{client: counting, reader: counting}
	p := &pass{m: &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"},
		Spec: v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Name: "good"}}}, log: logr.Discard()}
	for range 3 {
		require.Equal(t, lifecycle.ProblemNone, r.classOf(context.Background(), p).problem)
	}
	require.Equal(t, 2, reads, "the class and its Secret, once")
}
