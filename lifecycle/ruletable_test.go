package lifecycle

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
)

// Every rule has an entry; the identifiers are unique; a rule with a
// driver method has a handler; the rules of the deletion flow are emitted
// at a stage of deletion, and the rules of other flows name no stage.
func TestRuleTableIsComplete(t *testing.T) {
	seen := map[string]Rule{}
	for r := RuleNone; r < ruleCount; r++ {
		s, ok := r.spec()
		require.True(t, ok)
		require.NotEmpty(t, s.id, "rule %d has no identifier", r)
		require.NotEmpty(t, s.text, "%s has no text", s.id)
		if other, dup := seen[s.id]; dup {
			t.Fatalf("%s is the identifier of rules %d and %d", s.id, other, r)
		}
		seen[s.id] = r
		if s.method != driverapi.MethodNone {
			require.NotEqual(t, handleNone, s.handler, "%s asks the driver but handles no answer", s.id)
		}
		deletion := strings.HasPrefix(s.id, "delete.")
		if s.stage != StageNone {
			require.True(t, deletion, "%s names a deletion stage", s.id)
			require.Equal(t, anyStatus, s.at, "%s: a deletion op is placed by its stage", s.id)
		}
		if deletion && s.handler != handleNone {
			require.NotEqual(t, StageNone, s.stage, "%s handles an outcome of deletion at no stage", s.id)
		}
	}
	_, ok := ruleCount.spec()
	require.False(t, ok)
	require.Equal(t, "rule(9999)", Rule(9999).String())
}
