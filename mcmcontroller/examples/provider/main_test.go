package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// The wiring example, run as a provider's main runs it against a real API
// server with MCM's CRDs, takes a machine to Running with MCM's own
// FakeDriver.
func TestProviderMainRunsTheController(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("needs KUBEBUILDER_ASSETS (tools/envtest/build.sh)")
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/gardener/machine-controller-manager").Output()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join(strings.TrimSpace(string(out)), "kubernetes", "crds")},
		ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := "shoot--example"
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cloud"}, Data: map[string][]byte{"userData": []byte("#!/bin/sh")}},
		&v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "small"}, Provider: "FakeProvider",
			ProviderSpec: runtime.RawExtension{Raw: []byte(`{}`)}, SecretRef: &corev1.SecretReference{Namespace: ns, Name: "cloud"}},
		&v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "worker-1"},
			Spec: v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "small"}}},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// A port free now, for the controller's endpoints.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
	done := make(chan error, 1)
	provider := driver.NewFakeDriver(false, "fake:///zone-a/vm-1", "node-vm-1", "", nil, nil, nil)
	go func() {
		done <- run(ctx, []string{"--control-kubeconfig=" + kubeconfig, "--target-kubeconfig=" + kubeconfig,
			"--namespace=" + ns, "--address=127.0.0.1", "--port=" + port}, provider)
	}()

	m := &v1alpha1.Machine{}
	wait(t, done, "the machine Pending on its instance", func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "worker-1"}, m) == nil &&
			m.Status.CurrentStatus.Phase == v1alpha1.MachinePending && m.Spec.ProviderID == "fake:///zone-a/vm-1"
	})
	// The endpoints MCM serves on --address and --port.
	for path, want := range map[string]string{"/healthz": "ok", "/metrics": "controller_runtime_reconcile_total"} {
		resp, err := http.Get("http://127.0.0.1:" + port + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Fatalf("GET %s: %d, %.200q", path, resp.StatusCode, body)
		}
	}
	// The node joins.
	now := metav1.Now()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-vm-1"}, Spec: corev1.NodeSpec{ProviderID: "fake:///zone-a/vm-1"}}
	if err := c.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	// Again on a conflict with the controller's own write of the node
	// (MCM's finalizer).
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(n), n); err != nil {
			return err
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: now, LastTransitionTime: now}}
		return c.Status().Update(ctx, n)
	})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, done, "the machine Running", func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "worker-1"}, m) == nil &&
			m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

// wait polls cond for up to 60 s, failing early when run returns.
func wait(t *testing.T, done <-chan error, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("run returned while waiting for %s: %v", what, err)
		default:
		}
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
