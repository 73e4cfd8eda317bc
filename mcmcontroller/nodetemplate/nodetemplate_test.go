package nodetemplate

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func template(labels, annotations map[string]string, taints ...corev1.Taint) *v1alpha1.NodeTemplateSpec {
	return &v1alpha1.NodeTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
		Spec:       corev1.NodeSpec{Taints: taints},
	}
}

func taint(key, value string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: effect}
}

// apply writes what Plan asks into node, as the controller's writes would.
func apply(t *testing.T, tmpl *v1alpha1.NodeTemplateSpec, capacity corev1.ResourceList, node *corev1.Node) (*corev1.Node, Sync) {
	t.Helper()
	before := node.DeepCopy()
	s, err := Plan(tmpl, capacity, node)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(node, before) {
		t.Fatal("Plan changed the node it was given")
	}
	if s.Node == nil {
		if s.Update || s.UpdateStatus {
			t.Fatalf("a write asked without a node: %+v", s)
		}
		return node, s
	}
	return s.Node, s
}

func TestTemplateIsAppliedAndRecorded(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"kubernetes.io/hostname": "n"},
		Annotations: map[string]string{"kept": "1"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{taint("node.kubernetes.io/not-ready", "", corev1.TaintEffectNoSchedule)}}}
	tmpl := template(map[string]string{"pool": "a", "role": "worker"}, map[string]string{"note": "x"},
		taint("dedicated", "gpu", corev1.TaintEffectNoSchedule), taint("spot", "", corev1.TaintEffectPreferNoSchedule))
	got, s := apply(t, tmpl, nil, node)
	if !s.Update || s.UpdateStatus {
		t.Fatalf("sync %+v", s)
	}
	if got.Labels["pool"] != "a" || got.Labels["role"] != "worker" || got.Labels["kubernetes.io/hostname"] != "n" {
		t.Errorf("labels %v", got.Labels)
	}
	if got.Annotations["note"] != "x" || got.Annotations["kept"] != "1" {
		t.Errorf("annotations %v", got.Annotations)
	}
	wantTaints := []corev1.Taint{taint("node.kubernetes.io/not-ready", "", corev1.TaintEffectNoSchedule),
		taint("dedicated", "gpu", corev1.TaintEffectNoSchedule), taint("spot", "", corev1.TaintEffectPreferNoSchedule)}
	if !reflect.DeepEqual(got.Spec.Taints, wantTaints) {
		t.Errorf("taints %v, want %v", got.Spec.Taints, wantTaints)
	}
	var rec v1alpha1.NodeTemplateSpec
	if err := json.Unmarshal([]byte(got.Annotations[AppliedAnnotation]), &rec); err != nil || !reflect.DeepEqual(&rec, tmpl) {
		t.Fatalf("record %s (%v)", got.Annotations[AppliedAnnotation], err)
	}
	// In line now: nothing to write, again and again.
	for range 3 {
		if _, s := apply(t, tmpl, nil, got); s.Update || s.UpdateStatus || s.Node != nil {
			t.Fatalf("a node in line is written again: %+v", s)
		}
	}
}

// What an earlier template set and the current one dropped goes; what the
// node carries of its own stays.
func TestDroppedEntriesAreRemovedOthersKept(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"own": "1"}}}
	first := template(map[string]string{"a": "1", "b": "2"}, map[string]string{"x": "1"},
		taint("t1", "", corev1.TaintEffectNoSchedule), taint("t2", "", corev1.TaintEffectNoExecute))
	node, _ = apply(t, first, nil, node)
	node.Spec.Taints = append(node.Spec.Taints, taint("kubelet-own", "", corev1.TaintEffectNoSchedule))

	second := template(map[string]string{"b": "3"}, nil, taint("t2", "", corev1.TaintEffectNoExecute))
	got, s := apply(t, second, nil, node)
	if !s.Update {
		t.Fatal("no update")
	}
	if want := map[string]string{"own": "1", "b": "3"}; !reflect.DeepEqual(got.Labels, want) {
		t.Errorf("labels %v, want %v", got.Labels, want)
	}
	if _, ok := got.Annotations["x"]; ok {
		t.Errorf("the dropped annotation is still there: %v", got.Annotations)
	}
	want := []corev1.Taint{taint("t2", "", corev1.TaintEffectNoExecute), taint("kubelet-own", "", corev1.TaintEffectNoSchedule)}
	if !reflect.DeepEqual(got.Spec.Taints, want) {
		t.Errorf("taints %v, want %v", got.Spec.Taints, want)
	}
}

// A taint of the template whose value changed replaces the node's in its
// place; one with a time is compared by the time, not by its pointer.
func TestChangedTaintIsReplacedInPlace(t *testing.T) {
	added := metav1.NewTime(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	tmpl := template(nil, nil, taint("a", "1", corev1.TaintEffectNoSchedule),
		corev1.Taint{Key: "b", Effect: corev1.TaintEffectNoSchedule, TimeAdded: &added})
	node, _ := apply(t, tmpl, nil, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}})
	again := added.DeepCopy()
	node.Spec.Taints[1].TimeAdded = again // decoded anew: another pointer
	if _, s := apply(t, tmpl, nil, node); s.Update {
		t.Fatal("a taint with the same time is written again")
	}
	tmpl.Spec.Taints[0].Value = "2"
	got, s := apply(t, tmpl, nil, node)
	if !s.Update || got.Spec.Taints[0].Value != "2" || len(got.Spec.Taints) != 2 {
		t.Fatalf("taints %v", got.Spec.Taints)
	}
}

// A node without annotations gets the record, as in MCM, even with an
// empty template.
func TestNodeWithoutAnnotationsGetsTheRecord(t *testing.T) {
	got, s := apply(t, template(nil, nil), nil, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}})
	if !s.Update || got.Annotations[AppliedAnnotation] == "" {
		t.Fatalf("sync %+v annotations %v", s, got.Annotations)
	}
}

func TestVirtualCapacity(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{"cpu": resource.MustParse("4")}}}
	tmpl := template(nil, nil)
	node, _ = apply(t, tmpl, nil, node) // the record of the template
	capacity := corev1.ResourceList{"hana.sap.com/memory": resource.MustParse("1Ti")}
	got, s := apply(t, tmpl, capacity, node)
	if !s.UpdateStatus || !s.Update {
		t.Fatalf("sync %+v", s)
	}
	if q := got.Status.Capacity["hana.sap.com/memory"]; q.Cmp(resource.MustParse("1Ti")) != 0 || got.Status.Capacity.Cpu().Value() != 4 {
		t.Fatalf("capacity %v", got.Status.Capacity)
	}
	if !strings.Contains(got.Annotations[AppliedCapacityAnnotation], "hana.sap.com/memory") {
		t.Fatalf("record %q", got.Annotations[AppliedCapacityAnnotation])
	}
	if _, s := apply(t, tmpl, capacity, got); s.Update || s.UpdateStatus {
		t.Fatalf("capacity in line written again: %+v", s)
	}
	// The class drops it: removed, and so is the record.
	gone, s := apply(t, tmpl, corev1.ResourceList{}, got)
	if !s.UpdateStatus {
		t.Fatal("no status update")
	}
	if _, ok := gone.Status.Capacity["hana.sap.com/memory"]; ok || gone.Status.Capacity.Cpu().Value() != 4 {
		t.Fatalf("capacity %v", gone.Status.Capacity)
	}
	if _, ok := gone.Annotations[AppliedCapacityAnnotation]; ok {
		t.Fatal("the record of a dropped capacity stays")
	}
}

func TestUndecodableRecordIsAnError(t *testing.T) {
	for _, key := range []string{AppliedAnnotation, AppliedCapacityAnnotation} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{key: "{not json"}}}
		if _, err := Plan(template(nil, nil), nil, node); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error %v", key, err)
		}
	}
}

// A record MCM wrote is read: the node MCM kept in line is in line here.
func TestRecordOfMCMIsRead(t *testing.T) {
	tmpl := template(map[string]string{"pool": "a"}, nil, taint("dedicated", "gpu", corev1.TaintEffectNoSchedule))
	rec, err := json.Marshal(*tmpl) // MCM marshals the machine's spec.nodeTemplate by value
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"pool": "a", "old": "1"},
		Annotations: map[string]string{AppliedAnnotation: string(rec)}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)}}}
	if _, s := apply(t, tmpl, nil, node); s.Update || s.UpdateStatus {
		t.Fatalf("MCM's node in line is written: %+v", s)
	}
}

func TestValidate(t *testing.T) {
	if err := Validate(nil); err != nil {
		t.Fatal(err)
	}
	ok := &v1alpha1.NodeTemplate{
		Capacity:     corev1.ResourceList{"cpu": resource.MustParse("2"), "gpu": resource.MustParse("0"), "memory": resource.MustParse("8Gi")},
		InstanceType: "m5.large", Region: "eu-west-1", Zone: "eu-west-1a",
	}
	if err := Validate(ok); err != nil {
		t.Fatal(err)
	}
	bad := &v1alpha1.NodeTemplate{Capacity: corev1.ResourceList{"cpu": resource.MustParse("2")}, Region: "r"}
	err := Validate(bad)
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("error %v", err)
	}
	for _, want := range []string{"no gpu", "no memory", "instance type", "zone"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q is not reported: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "no cpu") || strings.Contains(err.Error(), "region") {
		t.Errorf("a problem that is not one is reported: %v", err)
	}
}
