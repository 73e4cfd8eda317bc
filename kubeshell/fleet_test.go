package kubeshell

import (
	"context"
	"testing"
	"time"
)

func TestRunFleetRunsAtOnceThenPeriodically(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var passes, orphans int
	done := make(chan error)
	go func() {
		done <- RunFleet(ctx, 10*time.Millisecond, 25*time.Millisecond, func(_ context.Context, collect bool) {
			passes++
			if collect {
				orphans++
			}
			if passes == 12 {
				cancel()
			}
		})
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if orphans == 0 || orphans >= passes {
		t.Fatalf("%d passes, %d collecting orphans", passes, orphans)
	}
}
