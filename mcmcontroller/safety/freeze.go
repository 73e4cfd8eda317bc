// Package safety holds the API-server check of MCM's safety controller:
// while the control cluster's or the target cluster's API server does not
// answer, what the controller observes cannot be trusted (a node that
// cannot be read looks gone, a kubelet that cannot report looks dead), so
// the lifecycle is told its observer is degraded and marks no machine
// Failed for it.
//
// MCM probes both API servers every --machine-safety-apiserver-statuscheck-period
// and, once either has not answered for longer than
// --machine-safety-apiserver-statuscheck-timeout, freezes its machine
// controller; on recovery it resets every Unknown machine to Running and
// reconciles it. Here the freeze is [lifecycle.Observer]: Degraded while
// frozen, and Since the time the freeze began or ended, from which the
// lifecycle counts its timeouts again, so the end of an outage fails no
// fleet at once, without rewriting any machine's phase.
package safety

import (
	"time"

	"github.com/purelifecycle/machine/lifecycle"
)

// Check is the state of the API-server check. The zero Check has seen
// both API servers answer for as long as it knows. It reads no clock: the
// caller passes the time of each probe.
type Check struct {
	// Period is the time between two probes while the API servers answer
	// (MCM --machine-safety-apiserver-statuscheck-period).
	Period time.Duration
	// DownFor is how long a probe may go unanswered before the controller
	// freezes (MCM --machine-safety-apiserver-statuscheck-timeout).
	DownFor time.Duration

	downSince time.Time // the first probe of the current outage that failed; zero while they answer
	frozen    bool
	since     time.Time // when the freeze began or ended; zero before any
}

// Probed records a probe at now: up reports that both API servers
// answered. It returns when to probe next, as MCM does: Period while they
// answer and while frozen; a fifth of DownFor (at least a second, so a
// zero DownFor does not spin) from a probe that failed while not frozen,
// the one that freezes included.
func (c *Check) Probed(now time.Time, up bool) (next time.Duration) {
	switch {
	case up && c.frozen:
		c.frozen, c.since, c.downSince = false, now, time.Time{}
	case up:
		c.downSince = time.Time{}
	case c.frozen:
	default:
		if c.downSince.IsZero() {
			c.downSince = now
		}
		if now.Sub(c.downSince) > c.DownFor {
			c.frozen, c.since = true, now
		}
		return max(c.DownFor/5, time.Second)
	}
	return c.Period
}

// Frozen reports whether the controller is frozen: an API server has not
// answered for longer than DownFor.
func (c *Check) Frozen() bool { return c.frozen }

// Observer is the lifecycle's view of the check: degraded while frozen,
// with the time the freeze began, and after it the time it ended.
func (c *Check) Observer() lifecycle.Observer {
	return lifecycle.Observer{Degraded: c.frozen, Since: c.since}
}
