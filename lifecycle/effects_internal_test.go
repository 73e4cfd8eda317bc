package lifecycle

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// No flow comes near MaxEffects, so the overflow paths of put and prepend
// are reached only from here: a full list keeps its effects, the extra one
// is dropped, and the decision says so.
func TestEffectsOverflowDropsTheExtraAndSaysSo(t *testing.T) {
	var d Decision
	x := decider{d: &d, waitFacts: waitFacts{st: &d.Status}}
	for i := range MaxEffects {
		x.nodeEffect(KindLabelNode, "node", "key", string(rune('a'+i)))
	}
	require.Zero(t, d.Anomalies)
	full := d.Effects

	extra := x.put(KindDeleteBootstrapToken)
	require.NotNil(t, extra)
	extra.Value = "dropped"
	require.Equal(t, AnomalyEffectsFull, d.Anomalies)
	require.Equal(t, full, d.Effects, "the list is untouched")

	require.False(t, d.Effects.prepend([]Effect{{Kind: KindEnsureFinalizer}}))
	require.Equal(t, full, d.Effects, "a prepend that does not fit changes nothing")
}

func TestPrependKeepsOrder(t *testing.T) {
	var e Effects
	e.list[0], e.list[1] = Effect{Kind: KindEvent}, Effect{Kind: KindLabelNode}
	e.n = 2
	require.True(t, e.prepend([]Effect{{Kind: KindEnsureFinalizer}, {Kind: KindEnsurePriority}}))
	var kinds []Kind
	for i := range e.Len() {
		kinds = append(kinds, e.At(i).Kind)
	}
	require.Equal(t, []Kind{KindEnsureFinalizer, KindEnsurePriority, KindEvent, KindLabelNode}, kinds)
}
