//go:build !mutation_earlyfinalizer

package lifecycle

// mutEarlyFinalizer is false in every real build; see mutation_earlyfinalizer_on.go.
const mutEarlyFinalizer = false
