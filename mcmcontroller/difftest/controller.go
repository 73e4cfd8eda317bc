package difftest

import (
	"context"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
)

// Controller is a machine controller the differential test drives one
// reconcile at a time: MCM's own (build tag mcmref) or the project's
// mcmcontroller/machines.
//
// For each scenario the runner builds the world in a fresh namespace, then
// calls Start once, Reconcile once per step, and Stop. An implementation:
//
//   - Start makes a controller of env.Namespace: its Machines,
//     MachineClasses and Secrets in that namespace, the target cluster's
//     nodes (and pods, volume attachments, bootstrap tokens in
//     kube-system) on the same API server, env.Driver as the provider
//     (MCM's driver.Driver), configured from env.Settings, frozen (MCM)
//     or with its observer degraded (the project's) when env.Frozen is
//     set, and without a target cluster when env.NoTarget is set. It
//     writes nothing.
//   - Reconcile runs one reconcile of the named machine synchronously,
//     with no worker or watch acting between calls: it first waits until
//     whatever it reads through caches shows the API server's state as it
//     is now (the runner and the previous reconcile wrote to it), then
//     reconciles and returns once every write and driver call of the
//     reconcile is done. now is the real clock's time: the runner moves
//     simulated time on by backdating what the controllers read
//     (Env.Advance), so a controller that takes its time as a parameter
//     gets time.Now(). A machine being deleted gets the reconcile that
//     deletes it; a machine that is gone gets nothing. A requeue the
//     reconcile asks for is returned, not scheduled.
//   - Stop releases what Start made.
//
// The runner observes what a reconcile did from the world (Observe), never
// from the controller: the error and requeue returned are recorded for the
// reports only.
type Controller interface {
	// Name names the controller in reports.
	Name() string
	// Start prepares a controller for env's scenario.
	Start(ctx context.Context, env *Env) error
	// Reconcile runs one reconcile of the named machine at now.
	Reconcile(ctx context.Context, machine string, now time.Time) (Result, error)
	// Stop releases what Start made.
	Stop()
}

// Result is what a reconcile reports of itself.
type Result struct {
	// Requeue is the period after which it asks to reconcile again.
	Requeue time.Duration
	// Detail says more, for the reports (MCM: the queue it ran in).
	Detail string
}

// Backdater is implemented by a controller that keeps timestamps of its
// own in the Machine (the project's state annotations): Env.Advance calls
// it so they move back with MCM's. BackdateObject moves the stamps of the
// object's metadata (written with an update), BackdateStatus those of its
// status (written to the status subresource). A stamp copied from
// creationTimestamp or deletionTimestamp stays as it is: Advance shortens
// the timeouts counted from those instead.
type Backdater interface {
	BackdateObject(m *v1alpha1.Machine, d time.Duration)
	BackdateStatus(m *v1alpha1.Machine, d time.Duration)
}
