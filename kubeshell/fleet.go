package kubeshell

import (
	"context"
	"time"
)

// RunFleet runs a controller's fleet passes until ctx ends: pass at once,
// then every interval, and every orphanInterval (0: never) with
// collectOrphans set (lifecycle.Orphans); a pass that overruns delays the
// next, passes never overlap. It returns nil when ctx ends, as a
// manager.Runnable's Start does.
func RunFleet(ctx context.Context, interval, orphanInterval time.Duration, pass func(ctx context.Context, collectOrphans bool)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	var orphans <-chan time.Time
	if orphanInterval > 0 {
		ot := time.NewTicker(orphanInterval)
		defer ot.Stop()
		orphans = ot.C
	}
	pass(ctx, false)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			pass(ctx, false)
		case <-orphans:
			pass(ctx, true)
		}
	}
}
