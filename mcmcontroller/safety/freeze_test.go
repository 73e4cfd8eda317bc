package safety

import (
	"testing"
	"time"

	"github.com/purelifecycle/machine/lifecycle"
)

var t0 = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

func check() *Check { return &Check{Period: time.Minute, DownFor: 30 * time.Second} }

func TestAnsweringAPIServersKeepTheObserverHealthy(t *testing.T) {
	c := check()
	for i := range 5 {
		if next := c.Probed(t0.Add(time.Duration(i)*time.Minute), true); next != time.Minute {
			t.Fatalf("next probe in %v", next)
		}
	}
	if c.Frozen() || c.Observer() != (lifecycle.Observer{}) {
		t.Fatalf("observer %+v", c.Observer())
	}
}

// An outage shorter than DownFor freezes nothing; the probes come five
// times as often while it lasts.
func TestAShortOutageFreezesNothing(t *testing.T) {
	c := check()
	if next := c.Probed(t0, false); next != 6*time.Second {
		t.Fatalf("next probe in %v, want 6s", next)
	}
	c.Probed(t0.Add(30*time.Second), false) // exactly DownFor: not longer
	if c.Frozen() {
		t.Fatal("frozen at DownFor")
	}
	c.Probed(t0.Add(36*time.Second), true)
	if c.Frozen() || c.Observer() != (lifecycle.Observer{}) {
		t.Fatalf("observer %+v", c.Observer())
	}
	// The next outage counts from its own start.
	c.Probed(t0.Add(40*time.Second), false)
	c.Probed(t0.Add(65*time.Second), false)
	if c.Frozen() {
		t.Fatal("the second outage was counted from the first")
	}
}

// An outage longer than DownFor degrades the observer from the probe that
// saw it so; the first probe answered ends it, and the observer says since
// when it is healthy again.
func TestALongOutageDegradesTheObserverUntilAProbeIsAnswered(t *testing.T) {
	c := check()
	c.Probed(t0, false)
	c.Probed(t0.Add(6*time.Second), false)
	frozeAt := t0.Add(31 * time.Second)
	if next := c.Probed(frozeAt, false); next != 6*time.Second || !c.Frozen() {
		t.Fatalf("frozen %v, next probe in %v", c.Frozen(), next)
	}
	if got := c.Observer(); got != (lifecycle.Observer{Degraded: true, Since: frozeAt}) {
		t.Fatalf("observer %+v", got)
	}
	if next := c.Probed(t0.Add(2*time.Minute), false); next != time.Minute {
		t.Fatalf("next probe of the frozen controller in %v", next)
	}
	if got := c.Observer(); got.Since != frozeAt || !got.Degraded {
		t.Fatalf("a probe of the frozen controller moved the observer: %+v", got)
	}
	back := t0.Add(3 * time.Minute)
	c.Probed(back, true)
	if got := c.Observer(); got != (lifecycle.Observer{Since: back}) {
		t.Fatalf("observer after the outage %+v", got)
	}
	// A new outage starts from scratch.
	c.Probed(back.Add(time.Minute), false)
	if c.Frozen() {
		t.Fatal("frozen at the first failed probe")
	}
}

// A DownFor of zero freezes at the second failed probe and never spins.
func TestZeroDownFor(t *testing.T) {
	c := &Check{Period: time.Minute}
	if next := c.Probed(t0, false); next != time.Second {
		t.Fatalf("next probe in %v", next)
	}
	c.Probed(t0.Add(time.Second), false)
	if !c.Frozen() {
		t.Fatal("not frozen")
	}
}
