// Package bench measures the lifecycle core side by side with the two
// generic Go state machine libraries a reader would otherwise pick,
// github.com/looplab/fsm and github.com/qmuntal/stateless, and with
// hand-written pure functions of the same shape as [lifecycle.Step] that mark
// the floor for that shape (doc/performance.md describes the method and
// holds the results).
//
// It is a separate module, so the library's go.mod never requires the peers.
// Everyone models one small transition table, the health edges of a machine
// (Table): the peers as configured state machines fired with an event, the
// library as [lifecycle.Step] on a realistic [lifecycle.Input] whose node
// turned healthy or unhealthy. TestEquivalence checks that all of them take
// the same edges. The benchmarks name their implementations impl=..., so
// that `benchstat -col /impl` lines them up; run.sh runs the whole
// comparison with one command.
package bench
