//go:build race

package doc_test

// raceOn reports that the race detector is on; the comparison of the
// generated pages then skips (CI runs it once without the detector).
const raceOn = true
