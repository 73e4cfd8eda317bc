//go:build mutation_droppedkey

package lifecycle

// mutDroppedKey breaks a rule on purpose: a desired metadata key missing on the instance counts as in sync. CI builds with the tag
// mutation_droppedkey and requires the property tests, the model check and the
// fleet simulator to fail (mutation_test.go, .ci/run).
const mutDroppedKey = true
