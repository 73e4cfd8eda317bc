package machines

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
)

// Which of two machines of one name holds it: one acted on before one
// not, then the one created first, then the smaller UID; never both.
func TestHoldsBefore(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Second))
	mk := func(uid string, created metav1.Time, phase, pid string) *v1alpha1.Machine {
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", UID: types.UID(uid), CreationTimestamp: created}}
		m.Status.CurrentStatus.Phase = phase
		m.Spec.ProviderID = pid
		return m
	}
	for _, c := range []struct {
		name   string
		a, b   *v1alpha1.Machine
		aFirst bool
	}{
		{"older", mk("b", t0, "", ""), mk("a", t1, "", ""), true},
		{"same second, smaller UID", mk("a", t0, "", ""), mk("b", t0, "", ""), true},
		{"acted on, though younger", mk("z", t1, "Pending", ""), mk("a", t0, "", ""), true},
		{"instance recorded, though younger", mk("z", t1, "", "fake:///1"), mk("a", t0, "", ""), true},
		{"both acted on: older", mk("z", t0, "Running", ""), mk("a", t1, "Pending", ""), true},
		{"recorded status instance", func() *v1alpha1.Machine {
			m := mk("z", t1, "", "")
			m.Status.Lifecycle = &v1alpha1.LifecycleState{ProviderID: "fake:///2"}
			return m
		}(), mk("a", t0, "", ""), true},
	} {
		if got := holdsBefore(c.a, c.b); got != c.aFirst {
			t.Errorf("%s: holdsBefore(a, b) = %v", c.name, got)
		}
		if holdsBefore(c.b, c.a) == c.aFirst {
			t.Errorf("%s: both hold the name, or neither", c.name)
		}
	}
}
