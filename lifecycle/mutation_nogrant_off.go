//go:build !mutation_nogrant

package lifecycle

// mutNoGrant is false in every real build; see mutation_nogrant_on.go.
const mutNoGrant = false
