// Package phase holds the phases a machine goes through, exactly as Gardener's
// machine-controller-manager (MCM) names them, and the declared relation of
// which phase may follow which.
//
// A [Phase] is a small integer. Its [Phase.String] is MCM's text ("" for
// [None], "Pending", "Running", ...), and [Parse] turns that text back into a
// Phase, refusing any text MCM does not write.
//
// The transition relation is data: [Edges] lists every declared change with
// the rule that takes it, and [Allowed] answers whether a change is declared.
// The lifecycle flows only take declared edges (a property test checks it),
// and the diagrams in doc/ are generated from [Edges], so the documentation
// cannot drift from the code.
//
// Phases and their meaning:
//
//	None                     the machine is being created on the provider
//	Pending                  the instance exists, the node has not joined yet
//	Available                the instance exists; the controller runs without a target cluster
//	Running                  the node joined and is healthy
//	Unknown                  the node is unhealthy or missing
//	Failed                   creation or health timed out; the owner replaces the machine
//	CrashLoopBackOff         creating or initializing the instance failed; retried
//	Terminating              deletion has begun
//	InPlaceUpdating          MCM's node-agent in-place update is draining/updating the node
//	InPlaceUpdateSuccessful  the node agent reported success
//	InPlaceUpdateFailed      the node agent reported failure or timed out
//
// The three in-place phases belong to MCM's node-agent protocol. The library
// declares their edges so that machines MCM manages can be read and their
// transitions checked, but its own flows do not enter them yet.
package phase
