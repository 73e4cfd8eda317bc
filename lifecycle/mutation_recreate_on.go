//go:build mutation_recreate

package lifecycle

// mutRecreate breaks a rule on purpose: CreateMachine is asked while an instance is recorded. CI builds with the tag
// mutation_recreate and requires the property tests, the model check and the
// fleet simulator to fail (mutation_test.go, .ci/run).
const mutRecreate = true
