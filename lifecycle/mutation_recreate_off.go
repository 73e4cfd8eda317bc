//go:build !mutation_recreate

package lifecycle

// mutRecreate is false in every real build; see mutation_recreate_on.go.
const mutRecreate = false
