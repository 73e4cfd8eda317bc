package kubeshell

import (
	"errors"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/purelifecycle/machine/lifecycle/pass"
	"github.com/purelifecycle/machine/retry"
)

// StatusUnreadable is the error of a machine whose status cannot be read
// back into the lifecycle's: without its saved state no step can be
// trusted, so the machine is left alone. A shell's Observe returns it.
type StatusUnreadable struct{ Err error }

// Error implements error.
func (e *StatusUnreadable) Error() string { return "machine status unreadable: " + e.Err.Error() }

// Unwrap returns the reason.
func (e *StatusUnreadable) Unwrap() error { return e.Err }

// ResultOf is the reconcile's answer to a pass's report: a machine left
// alone (StatusUnreadable) is looked at again after the long period; a
// failed observation is the reconcile's error, retried with the work
// queue's backoff; a machine gone, or a pass that asks for none, is not
// requeued; otherwise the pass's requeue. log tells of the first two and
// of a pass cut short because the controller stops.
func ResultOf(log logr.Logger, rep pass.Report) (reconcile.Result, error) {
	var unreadable *StatusUnreadable
	switch {
	case rep.End == pass.EndObserveFailed && errors.As(rep.Err, &unreadable):
		log.Error(rep.Err, "machine left alone")
		return reconcile.Result{RequeueAfter: retry.Long}, nil
	case rep.End == pass.EndObserveFailed:
		return reconcile.Result{}, rep.Err
	case rep.End == pass.EndCanceled:
		log.Info("pass ended early: the controller is stopping", "steps", rep.Steps)
	case rep.End == pass.EndGone || rep.Requeue <= 0:
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: rep.Requeue}, nil
}
