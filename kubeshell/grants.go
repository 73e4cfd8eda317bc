package kubeshell

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/purelifecycle/machine/lifecycle"
)

// Grants holds the fleet limiter's grants of a controller's last fleet
// pass (lifecycle.Limit), by machine UID: the machines that may be marked
// Failed. A pass reads its machine's grant at every step. The zero Grants
// grants nothing; it is safe for concurrent use.
type Grants struct {
	mu   sync.RWMutex
	fail map[types.UID]bool
}

// Of returns the machine's grant.
func (g *Grants) Of(uid types.UID) lifecycle.Grant {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return lifecycle.Grant{Fail: g.fail[uid]}
}

// Replace makes fail the grants, and returns those granted now that were
// not before: their machines have new input, and are to be reconciled.
func (g *Grants) Replace(fail map[types.UID]bool) (granted map[types.UID]bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	granted = map[types.UID]bool{}
	for uid := range fail {
		if !g.fail[uid] {
			granted[uid] = true
		}
	}
	g.fail = fail
	return granted
}
