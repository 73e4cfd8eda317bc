//go:build !race

package lifecycletest_test

// raceOn reports that the race detector is on; see passcheck_race_on_test.go.
const raceOn = false
