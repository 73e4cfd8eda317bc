package lastop

import "time"

// Operation is MCM's LastOperation in the compact, structured form the
// lifecycle keeps in its status: which description ([Desc]) with which free
// text, instead of the text itself. [Operation.Describe] renders MCM's text
// when a shell needs it. The zero value is the empty LastOperation.
type Operation struct {
	// Type is the operation's type.
	Type Type
	// State is the operation's state.
	State State
	// Desc names the description.
	Desc Desc
	// ErrorCode is the name of MCM's error code, such as
	// "ResourceExhausted", or "" when there is none.
	ErrorCode string
	// Detail is the free text the template embeds at <detail>: a driver or
	// API error's text, a node annotation, a provider ID. For [DescUnknown]
	// it is the whole description.
	Detail string
	// Elapsed is the duration the template names at <elapsed>: the join
	// time, or for MCM's timeout texts the configured timeout.
	Elapsed time.Duration
}

// Args carries the values a template names that an [Operation] does not
// store, because the machine already knows them or they are only needed
// for rendering.
type Args struct {
	// Machine is the machine's name.
	Machine string
	// Node is the node's name.
	Node string
	// Conditions is the node conditions as MCM prints them
	// ([FormatConditions]).
	Conditions string
}

// Describe returns MCM's exact description for op: op.Desc's template with
// op's and a's values filled in. [DescNone] gives ""; [DescUnknown], and a
// Desc that is not valid, give op.Detail verbatim. Fixed texts are returned
// without allocating; templates allocate the result.
func (op Operation) Describe(a Args) string {
	switch {
	case op.Desc == DescNone:
		return ""
	case op.Desc == DescUnknown || !op.Desc.Valid():
		return op.Detail
	}
	return render(op.Desc.Format(), op, a)
}

// LastOperation is MCM's LastOperation record as it is written to a
// Machine's status.
type LastOperation struct {
	// Description is MCM's text.
	Description string
	// ErrorCode is the name of MCM's error code, or "".
	ErrorCode string
	// LastUpdateTime is when the record was written.
	LastUpdateTime time.Time
	// State is the operation's state.
	State State
	// Type is the operation's type.
	Type Type
}

// Render returns the record MCM would write for op at time at.
func (op Operation) Render(a Args, at time.Time) LastOperation {
	return LastOperation{
		Description:    op.Describe(a),
		ErrorCode:      op.ErrorCode,
		LastUpdateTime: at,
		State:          op.State,
		Type:           op.Type,
	}
}

// Parsed is what [Parse] learns from a description.
type Parsed struct {
	// Desc is the matched description, [DescUnknown] if none matched, or
	// [DescNone] for the empty text.
	Desc Desc
	// Step is the step the description was written for: [Desc.Step] of a
	// matched description, or [StepOf] of an unmatched one.
	Step Step
	// Detail is the text found at <detail>, or the whole description for
	// [DescUnknown].
	Detail string
	// Elapsed is the duration found at <elapsed>.
	Elapsed time.Duration
	// Args holds the names and conditions found in the text.
	Args Args
}

// Parse reads an MCM description back into structured form, so a machine
// MCM wrote can be adopted, including one MCM was in the middle of
// deleting.
//
// The text is matched exactly against every template, fixed texts by
// equality and templates by their literal text around the placeholders,
// extracting Detail, Elapsed and Args. When several templates match, the
// one with the most literal text wins, so "machine code: " in an S1j text
// is not taken for part of S1e's <detail>. A template is matched as a whole
// before any marker is looked at, so error text that contains another
// template's marker does not change the result: the step is the one the
// text ends with. Matching is exact: an <elapsed> that Go does not print
// that way, or a name with white space, does not match, and Describe of the
// result always gives text back byte for byte.
//
// Text no template matches is [DescUnknown] with Detail = text and
// Step = StepOf(text), the step MCM itself would take. The empty text is
// [DescNone].
func Parse(description string) Parsed {
	if description == "" {
		return Parsed{}
	}
	best := Parsed{Desc: DescUnknown, Step: StepOf(description), Detail: description}
	bestLiteral := -1
	for d := descFirst; d < descCount; d++ {
		p, literal, ok := match(d.Format(), description)
		if ok && literal > bestLiteral {
			p.Desc, p.Step = d, d.Step()
			best, bestLiteral = p, literal
		}
	}
	return best
}

// FromLastOperation converts an MCM record back into an [Operation] (the
// description is read with [Parse]) and returns the [Args] found in its
// text. The record's LastUpdateTime is not part of an Operation.
func FromLastOperation(lo LastOperation) (Operation, Args) {
	p := Parse(lo.Description)
	return Operation{
		Type:      lo.Type,
		State:     lo.State,
		Desc:      p.Desc,
		ErrorCode: lo.ErrorCode,
		Detail:    p.Detail,
		Elapsed:   p.Elapsed,
	}, p.Args
}
