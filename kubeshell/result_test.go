package kubeshell

import (
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/purelifecycle/machine/lifecycle/pass"
	"github.com/purelifecycle/machine/retry"
)

func TestResultOf(t *testing.T) {
	down := errors.New("down")
	for _, tc := range []struct {
		rep     pass.Report
		want    reconcile.Result
		wantErr bool
	}{
		{pass.Report{End: pass.EndObserveFailed, Err: &StatusUnreadable{Err: down}}, reconcile.Result{RequeueAfter: retry.Long}, false},
		{pass.Report{End: pass.EndObserveFailed, Err: down}, reconcile.Result{}, true},
		{pass.Report{End: pass.EndGone, Requeue: time.Minute}, reconcile.Result{}, false},
		{pass.Report{End: pass.EndDone}, reconcile.Result{}, false},
		{pass.Report{End: pass.EndDone, Requeue: time.Minute}, reconcile.Result{RequeueAfter: time.Minute}, false},
		{pass.Report{End: pass.EndCanceled, Requeue: time.Second}, reconcile.Result{RequeueAfter: time.Second}, false},
	} {
		got, err := ResultOf(logr.Discard(), tc.rep)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("ResultOf(%+v) = %+v, %v", tc.rep, got, err)
		}
	}
}
