// Package lastop is MCM's LastOperation: its types and states, the
// vocabulary of descriptions the machine-controller-manager writes, and the
// translation between a compact structured form and MCM's exact text.
//
// # Structured form, text on demand
//
// MCM keeps a machine's last operation as a record of type, state, error
// code and a human-readable Description. The lifecycle keeps an [Operation]
// instead: the [Type], the [State], the error code, a [Desc] naming which of
// MCM's descriptions applies, and only the free text that description embeds
// (Detail, such as a driver error) and the duration it names (Elapsed).
// Names the machine already knows (machine, node) and the node conditions
// are not stored; they are passed as [Args] when text is needed.
//
// Text is produced only when a shell asks: [Operation.Describe] returns the
// description byte for byte as MCM would write it, and [Operation.Render]
// the whole [LastOperation] record. Every template is checked against MCM's
// fmt format strings, because the text is a compatibility contract: tools,
// dashboards and MCM itself read it. [Desc.Format] shows each template.
//
// # Markers and steps
//
// MCM appends stage constants to its descriptions (the deletion step
// markers of doc/mcm-rows.md), and its termination reconciler uses the
// description as the deletion pipeline's program counter: it searches the
// text with strings.Contains for the markers in a fixed order and runs the
// first step found ([StepOf]). A
// description without a marker restarts the pipeline. Because descriptions
// embed error text, an error message containing a marker silently reroutes
// the pipeline, and rewording a message changes behaviour (MCM design
// problem d.1 in doc/mcm-rows.md).
//
// The library therefore keeps the step explicit in its own status and never
// decides anything from text. Each [Desc] knows the marker its text ends
// with ([Desc.Step]), so rendered descriptions still drive MCM correctly
// when MCM reads them. The descriptions the library adds for flows MCM lacks
// carry no marker, since they are not part of MCM's deletion pipeline.
//
// # Parsing for adoption
//
// A machine MCM wrote, possibly half-way through its deletion, is adopted
// by reading its record once: [FromLastOperation] and [Parse] match the
// description exactly against every template (not by searching for
// markers), recover Detail, Elapsed and the names, and report the step the
// text was written for. Unrecognised text becomes [DescUnknown], which
// renders as the original text, with the step MCM itself would take. For
// any text, rendering the parsed result gives the text back.
//
// All functions are pure: they read no clock and keep no state.
package lastop
