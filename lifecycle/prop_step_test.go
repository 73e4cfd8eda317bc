package lifecycle_test

import (
	"testing"

	"pgregory.net/rapid"
)

// On any input, with any valid configuration, Step keeps every promise a
// single decision shows (lifecycletest.Check), never changes its input and
// gives the same decision twice. FuzzStep checks the same property from
// fuzzed bytes.
func TestPropertyEveryDecisionKeepsThePromises(t *testing.T) {
	rapid.Check(t, stepProperty)
}
