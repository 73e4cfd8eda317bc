//go:build mutation_earlyfinalizer

package lifecycle

// mutEarlyFinalizer breaks a rule on purpose: a failed DeleteMachine counts as done, so the finalizer goes while the VM may live. CI builds with the tag
// mutation_earlyfinalizer and requires the property tests, the model check and the
// fleet simulator to fail (mutation_test.go, .ci/run).
const mutEarlyFinalizer = true
