//go:build mutation_nogrant

package lifecycle

// mutNoGrant breaks a rule on purpose: Unknown becomes Failed without the limiter's grant. CI builds with the tag
// mutation_nogrant and requires the property tests, the model check and the
// fleet simulator to fail (mutation_test.go, .ci/run).
const mutNoGrant = true
