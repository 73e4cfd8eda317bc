//go:build !mutation_droppedkey

package lifecycle

// mutDroppedKey is false in every real build; see mutation_droppedkey_on.go.
const mutDroppedKey = false
