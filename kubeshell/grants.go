package kubeshell

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/purelifecycle/machine/lifecycle"
)

// Grants holds the fleet limiter's grants of a controller's last fleet
// pass (lifecycle.Limit), by machine UID: the machines that may be marked
// Failed, and those held back for their zone's outage. A pass reads its
// machine's grant at every step. The zero Grants grants nothing; it is
// safe for concurrent use.
type Grants struct {
	mu     sync.RWMutex
	grants map[types.UID]lifecycle.Grant
}

// Of returns the machine's grant.
func (g *Grants) Of(uid types.UID) lifecycle.Grant {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.grants[uid]
}

// Replace makes grants the grants (machines without one are left out),
// and returns those that may be marked Failed now and could not before,
// and those whose preservation was granted or taken back: their machines
// have new input, and are to be reconciled.
func (g *Grants) Replace(grants map[types.UID]lifecycle.Grant) (granted map[types.UID]bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	granted = map[types.UID]bool{}
	for uid, gr := range grants {
		if gr.Fail && !g.grants[uid].Fail || gr.Preserve != g.grants[uid].Preserve {
			granted[uid] = true
		}
	}
	for uid, gr := range g.grants {
		if _, ok := grants[uid]; !ok && gr.Preserve {
			granted[uid] = true // its preservation taken back
		}
	}
	g.grants = grants
	return granted
}

// GrantsOf returns out, the result of lifecycle.Limit over a fleet, by the
// UID of each machine (uid(i) is that of the fleet's i-th), leaving out the
// machines granted nothing.
func GrantsOf(out []lifecycle.Grant, uid func(i int) types.UID) map[types.UID]lifecycle.Grant {
	grants := map[types.UID]lifecycle.Grant{}
	for i, g := range out {
		if g.Fail || !g.Held.IsZero() || g.Preserve {
			grants[uid(i)] = g
		}
	}
	return grants
}
