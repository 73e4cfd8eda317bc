// Package difftest holds the tests that run MCM's own machine controller
// beside the lifecycle, to compare what each does with the same machines.
// They are built with the tag mcmref by run.sh, which adds to a copy of MCM
// v0.62.1 the one function they need to drive MCM's controller one
// reconcile at a time (testdata/hook.go.txt); a plain go test builds none of
// them.
package difftest
