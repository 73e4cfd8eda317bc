package lastop

import (
	"strconv"
	"strings"
	"time"
	"unicode"
)

// The templates of [Desc.Format] are read by two small loops: render fills
// the placeholders, match does the reverse. A template is a literal, then
// any number of (placeholder, literal) pairs; no two placeholders are
// adjacent.

// nextPart splits the template f at its first placeholder: the literal
// before it, the placeholder ("" if there is none) and the rest after it.
func nextPart(f string) (lit, ph, rest string) {
	for i := 0; i < len(f); i++ {
		if f[i] != '<' {
			continue
		}
		for _, p := range [...]string{phMachine, phMachineQuoted, phNode, phNodeQuoted, phDetail, phElapsed, phConditions} {
			if strings.HasPrefix(f[i:], p) {
				return f[:i], p, f[i+len(p):]
			}
		}
	}
	return f, "", ""
}

// render writes the template f with the placeholders filled from op and a.
// A template without placeholders is returned as is, without allocating.
func render(f string, op Operation, a Args) string {
	lit, ph, rest := nextPart(f)
	if ph == "" {
		return f
	}
	var b strings.Builder
	b.Grow(len(f) + len(op.Detail) + len(a.Machine) + len(a.Node) + len(a.Conditions))
	for {
		b.WriteString(lit)
		switch ph {
		case "":
			return b.String()
		case phMachine:
			b.WriteString(a.Machine)
		case phMachineQuoted:
			b.WriteString(strconv.Quote(a.Machine))
		case phNode:
			b.WriteString(a.Node)
		case phNodeQuoted:
			b.WriteString(strconv.Quote(a.Node))
		case phDetail:
			b.WriteString(op.Detail)
		case phElapsed:
			b.WriteString(op.Elapsed.String())
		case phConditions:
			b.WriteString(a.Conditions)
		}
		lit, ph, rest = nextPart(rest)
	}
}

// match reports whether text is an instance of the template f and returns
// the values it extracted and the number of literal bytes that matched,
// which measures how specific the match is.
//
// A placeholder followed by more placeholders ends at the first occurrence
// of the literal after it; the last one takes everything up to the final
// literal. Names (<machine>, <node>) never contain white space, as
// Kubernetes names cannot; quoted names must be one Go string literal;
// <elapsed> must be a duration in the exact form Go prints. A match is
// accepted only if rendering the extracted values gives text back exactly,
// so a caller can always reproduce text from the result.
func match(f, text string) (p Parsed, literal int, ok bool) {
	lit, ph, frest := nextPart(f)
	if ph == "" {
		return p, len(text), text == f
	}
	if !strings.HasPrefix(text, lit) {
		return p, 0, false
	}
	rest := text[len(lit):]
	literal = len(lit)
	for ph != "" {
		next, nextPh, nextRest := nextPart(frest)
		var val string
		switch {
		case ph == phMachineQuoted || ph == phNodeQuoted:
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return p, 0, false
			}
			if val, err = strconv.Unquote(q); err != nil {
				return p, 0, false
			}
			rest = rest[len(q):]
			if !strings.HasPrefix(rest, next) || (nextPh == "" && len(rest) != len(next)) {
				return p, 0, false
			}
			rest = rest[len(next):]
		case nextPh == "":
			if !strings.HasSuffix(rest, next) {
				return p, 0, false
			}
			val, rest = rest[:len(rest)-len(next)], ""
		default:
			i := strings.Index(rest, next)
			if next == "" || i < 0 {
				return p, 0, false
			}
			val, rest = rest[:i], rest[i+len(next):]
		}
		switch ph {
		case phMachine, phNode:
			if strings.IndexFunc(val, unicode.IsSpace) >= 0 {
				return p, 0, false
			}
		}
		switch ph {
		case phMachine, phMachineQuoted:
			p.Args.Machine = val
		case phNode, phNodeQuoted:
			p.Args.Node = val
		case phDetail:
			p.Detail = val
		case phConditions:
			p.Args.Conditions = val
		case phElapsed:
			d, err := time.ParseDuration(val)
			if err != nil {
				return p, 0, false
			}
			p.Elapsed = d
		}
		literal += len(next)
		ph, frest = nextPh, nextRest
	}
	if render(f, Operation{Detail: p.Detail, Elapsed: p.Elapsed}, p.Args) != text {
		return Parsed{}, 0, false
	}
	return p, literal, true
}
