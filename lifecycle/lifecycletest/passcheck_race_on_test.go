//go:build race

package lifecycletest_test

// raceOn reports that the race detector is on: the check of the reference
// shell then runs from fewer start states.
const raceOn = true
