package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// configDir is the controller's configuration, from this package.
const configDir = "../../config"

// manifests returns the objects of a YAML file of config/, one per
// document.
func manifests(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(configDir, file))
	require.NoError(t, err)
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		if len(bytes.TrimSpace(doc)) == 0 || strings.TrimSpace(stripComments(string(doc))) == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal(doc, &u.Object), "%s", file)
		out = append(out, u)
	}
}

func stripComments(doc string) string {
	var lines []string
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// apply applies the object with server-side apply, as `kubectl apply
// --server-side` does, in namespace ns when the object names none and ns
// is not "".
func apply(t *testing.T, u *unstructured.Unstructured, ns string) {
	t.Helper()
	if ns != "" && u.GetNamespace() == "" {
		u.SetNamespace(ns)
	}
	err := k8s.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner("manifests-test"), client.ForceOwnership)
	require.NoError(t, err, "applying %s %s", u.GetKind(), u.GetName())
}

// kustomizationResources returns the files config/kustomization.yaml
// lists.
func kustomizationResources(t *testing.T) []string {
	t.Helper()
	k := manifests(t, "kustomization.yaml")
	require.Len(t, k, 1)
	res, ok, err := unstructured.NestedStringSlice(k[0].Object, "resources")
	require.NoError(t, err)
	require.True(t, ok)
	return res
}

// The kustomization lists every manifest of config/ but the samples, and
// the API server accepts them all, applied in its order with server-side
// apply; the service account may then do what the controller does, and
// no more than its grants say.
func TestConfigManifestsAreAcceptedByTheAPIServer(t *testing.T) {
	needEnv(t)
	listed := kustomizationResources(t)
	var found []string
	require.NoError(t, filepath.WalkDir(configDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		rel, _ := filepath.Rel(configDir, path)
		if rel != "kustomization.yaml" && !strings.HasPrefix(rel, "samples"+string(filepath.Separator)) {
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	}))
	slices.Sort(found)
	require.Equal(t, found, slices.Sorted(slices.Values(listed)), "config/kustomization.yaml lists every manifest")

	kinds := map[string]int{}
	for _, file := range listed {
		for _, u := range manifests(t, file) {
			apply(t, u, "")
			kinds[u.GetKind()]++
		}
	}
	require.Equal(t, map[string]int{"CustomResourceDefinition": 2, "Namespace": 1, "ServiceAccount": 1, "ClusterRole": 2,
		"Role": 2, "ClusterRoleBinding": 1, "RoleBinding": 2, "Deployment": 1, "Service": 1}, kinds)

	// The Deployment as the API server keeps it.
	var dep appsv1.Deployment
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: "purelifecycle-system",
		Name: "purelifecycle-machine-controller"}, &dep))
	pod := dep.Spec.Template.Spec
	require.Equal(t, "purelifecycle-machine-controller", pod.ServiceAccountName)
	c := pod.Containers[0]
	require.Subset(t, c.Args, []string{"--leader-elect", "--install-crd=false", "--metrics-bind-address=:8443",
		"--health-probe-bind-address=:8081"})
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	require.Equal(t, map[string]int32{"metrics": 8443, "probes": 8081}, ports)
	require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.True(t, *pod.SecurityContext.RunAsNonRoot)

	// What the controller does, the service account may do; what it does
	// not, it may not.
	ns := newNamespace(t)
	for _, a := range []struct {
		verb, group, resource, sub, ns string
		allowed                        bool
	}{
		{"watch", "machine.purelifecycle.dev", "machines", "", ns, true},
		{"update", "machine.purelifecycle.dev", "machines", "", ns, true},
		{"update", "machine.purelifecycle.dev", "machines", "status", ns, true},
		{"update", "machine.purelifecycle.dev", "machines", "finalizers", ns, true},
		{"watch", "machine.purelifecycle.dev", "machineclasses", "", ns, true},
		{"get", "", "secrets", "", ns, true},
		{"list", "", "secrets", "", ns, false},
		{"create", "", "secrets", "", ns, false},
		{"watch", "", "secrets", "", "kube-system", true},
		{"create", "", "secrets", "", "kube-system", true},
		{"update", "", "secrets", "", "kube-system", true},
		{"delete", "", "secrets", "", "kube-system", true},
		{"watch", "", "nodes", "", "", true},
		{"update", "", "nodes", "", "", true},
		{"delete", "", "nodes", "", "", true},
		{"update", "", "nodes", "status", "", true},
		{"list", "", "pods", "", "", true},
		{"delete", "", "pods", "", ns, true},
		{"create", "", "pods", "eviction", ns, true},
		{"create", "", "pods", "", ns, false},
		{"watch", "storage.k8s.io", "volumeattachments", "", "", true},
		{"delete", "storage.k8s.io", "volumeattachments", "", "", true},
		{"create", "events.k8s.io", "events", "", ns, true},
		{"patch", "events.k8s.io", "events", "", ns, true},
		{"create", "", "events", "", "purelifecycle-system", true},
		{"update", "coordination.k8s.io", "leases", "", "purelifecycle-system", true},
		{"create", "coordination.k8s.io", "leases", "", "purelifecycle-system", true},
		{"create", "coordination.k8s.io", "leases", "", ns, false},
		{"get", "coordination.k8s.io", "leases", "", "purelifecycle-system", true},
		{"delete", "coordination.k8s.io", "leases", "", "purelifecycle-system", false},
		{"patch", "", "secrets", "", "kube-system", false},
		{"create", "authentication.k8s.io", "tokenreviews", "", "", true},
		{"create", "authorization.k8s.io", "subjectaccessreviews", "", "", true},
		{"create", "apiextensions.k8s.io", "customresourcedefinitions", "", "", false},
		{"delete", "machine.purelifecycle.dev", "machines", "", ns, false},
		{"update", "machine.purelifecycle.dev", "machineclasses", "", ns, true}, // the finalizer of a class in use
		{"delete", "machine.purelifecycle.dev", "machineclasses", "", ns, false},
		{"patch", "machine.purelifecycle.dev", "machineclasses", "", ns, false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:purelifecycle-system:purelifecycle-machine-controller",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:purelifecycle-system", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: a.verb, Group: a.group, Resource: a.resource,
				Subresource: a.sub, Namespace: a.ns},
		}}
		require.NoError(t, k8s.Create(context.Background(), sar))
		require.Equal(t, a.allowed, sar.Status.Allowed, "%s %s/%s/%s in %q: %s", a.verb, a.group, a.resource, a.sub, a.ns, sar.Status.Reason)
	}
	// The metrics reader may read /metrics.
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "scraper", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}}
	require.NoError(t, k8s.Create(context.Background(), sar))
	require.False(t, sar.Status.Allowed, "an unbound scraper may not")
}

// The samples apply to a namespace of one's own, and their machine is
// created from their class.
func TestSampleManifestsMakeAMachine(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newBareNamespace(t) // the samples' class is named as the tests' is
	for _, file := range []string{"samples/machineclass.yaml", "samples/machine.yaml"} {
		for _, u := range manifests(t, file) {
			apply(t, u, ns)
		}
	}
	m := waitPhase(t, ns, "sample", "Pending", 30*time.Second)
	require.Equal(t, "node-join", m.Status.Wait.For)
	inst, ok := provider.InstanceOf("sample")
	require.True(t, ok)
	require.Equal(t, "fake", inst.Class.Name)
	require.JSONEq(t, `{"image":"fake-image","size":"small"}`, string(inst.Class.ProviderSpec))
	require.Contains(t, string(inst.Class.Secret["userData"]), "kubeadm join --token ")
	require.NotContains(t, string(inst.Class.Secret["userData"]), "{{")
	require.Equal(t, "platform", inst.Metadata["team"])
	var secret corev1.Secret
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "fake-class"}, &secret))
	require.Equal(t, fmt.Sprint(corev1.SecretTypeOpaque), fmt.Sprint(secret.Type))
}

// The Deployment's arguments are the manager's flags, parsed with the
// definitions main parses them with; its ports are the addresses they
// bind; and the pod is given longer to stop than the manager gives the
// passes in flight.
func TestDeploymentArgsAreTheManagersFlags(t *testing.T) {
	deps := manifests(t, "manager/deployment.yaml")
	require.Len(t, deps, 1)
	var dep appsv1.Deployment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(deps[0].Object, &dep))
	pod := dep.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]

	o := defaultOptions()
	flags := flag.NewFlagSet("manager", flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	o.bind(flags)
	require.NoError(t, flags.Parse(c.Args), "the Deployment's args %q", c.Args)
	require.Empty(t, flags.Args(), "arguments that are no flags")
	require.True(t, o.leaderElect, "replicas elect a leader")
	require.False(t, o.installCRD, "the CRDs come from config/crd")
	require.True(t, o.secureMetrics, "metrics are served to authorized scrapers only")
	require.Equal(t, int32(2), *dep.Spec.Replicas)

	ports := map[string]string{}
	for _, p := range c.Ports {
		ports[p.Name] = ":" + strconv.Itoa(int(p.ContainerPort))
	}
	require.Equal(t, map[string]string{"metrics": o.metricsAddr, "probes": o.probeAddr}, ports)
	require.Equal(t, "probes", c.LivenessProbe.HTTPGet.Port.String())
	require.Equal(t, "probes", c.ReadinessProbe.HTTPGet.Port.String())
	require.NotNil(t, pod.TerminationGracePeriodSeconds)
	require.Greater(t, time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second, o.shutdown,
		"the kubelet kills the pod before the passes in flight had --graceful-shutdown-timeout")

	svcs := manifests(t, "manager/metrics_service.yaml")
	require.Len(t, svcs, 1)
	var svc corev1.Service
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(svcs[0].Object, &svc))
	require.Equal(t, dep.Spec.Selector.MatchLabels, svc.Spec.Selector, "the Service selects the manager's pods")
	require.Len(t, svc.Spec.Ports, 1)
	require.Equal(t, "metrics", svc.Spec.Ports[0].TargetPort.String(), "the Service sends scrapes to the metrics port")
}
