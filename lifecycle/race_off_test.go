//go:build !race

package lifecycle_test

// raceOn reports that the race detector is on; see race_on_test.go.
const raceOn = false
