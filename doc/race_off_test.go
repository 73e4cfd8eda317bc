//go:build !race

package doc_test

// raceOn reports that the race detector is on; see race_on_test.go.
const raceOn = false
