//go:build race

package lifecycle_test

// raceOn reports that the race detector is on; the exhaustive model check
// then skips (CI runs it once without the detector).
const raceOn = true
