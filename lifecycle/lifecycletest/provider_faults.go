package lifecycletest

import (
	"fmt"

	"github.com/purelifecycle/machine/driverapi"
)

// Fault is what a [Provider] answers a call with instead of its result. The
// zero Fault injects nothing.
type Fault struct {
	// Code is the status code to fail with; OK fails nothing unless
	// Undecodable is set.
	Code driverapi.Code
	// Undecodable makes the error a plain text error, which a shell cannot
	// decode: its text is Message.
	Undecodable bool
	// After makes a failing call take effect before it fails, as a call
	// whose answer was lost (a timeout after the cloud acted).
	After bool
	// NoIdentity makes a call that succeeds answer without the instance's
	// providerID and node name, as a provider that is slow to report them.
	NoIdentity bool
	// Message is the error's message; "" gives "injected failure of" and
	// the method.
	Message string
	// Text is the error's whole text, as err.Error() gives it; "" has the
	// provider build it from Code and Message. A simulation that injects
	// many faults sets it once per kind, so a fault allocates nothing.
	Text string
}

// failing reports whether f fails the call.
func (f *Fault) failing() bool { return f.Code != driverapi.OK || f.Undecodable }

// result returns the answer of a call of m that f fails, as
// driverapi.ResultOf gives it for the error.
func (f *Fault) result(m driverapi.Method) driverapi.Result {
	msg := f.Message
	if msg == "" {
		msg = "injected failure of " + m.String()
	}
	if f.Undecodable || f.Code == driverapi.OK {
		return driverapi.Result{Method: m, Code: driverapi.Unknown, Undecodable: true, Message: msg, Text: msg}
	}
	text := f.Text
	if text == "" {
		text = (&driverapi.StatusError{Code: f.Code, Message: msg}).Error()
	}
	return driverapi.Result{Method: m, Code: f.Code, Message: msg, Text: text}
}

// scriptedFault is a scripted failure and how many more calls it fails.
type scriptedFault struct {
	f    Fault
	left int
}

// FailNext makes the next times calls of method m fail with f, after the
// failures scripted for m before. Scripted failures come before the Fault
// hook, which is not asked for a call they fail.
func (p *Provider) FailNext(m driverapi.Method, f Fault, times int) {
	if times > 0 && f.failing() {
		p.scripted[m&15] = append(p.scripted[m&15], scriptedFault{f: f, left: times})
	}
}

// DropNext makes the next UpdateMetadata call that is carried out silently
// drop the changes of keys ("owner" names the owner tag), after the drops
// scripted before; each call of DropNext scripts one call. The Drop hook is
// not asked about the keys it drops.
func (p *Provider) DropNext(keys ...string) {
	p.drops = append(p.drops, keys)
}

// fault returns the fault of a call of m: the next scripted failure, else
// the Fault hook's.
func (p *Provider) fault(m driverapi.Method) Fault {
	if q := p.scripted[m&15]; len(q) > 0 {
		f := q[0].f
		if q[0].left--; q[0].left == 0 {
			p.scripted[m&15] = q[:copy(q, q[1:])]
		}
		if p.Log != nil {
			left := 0
			for _, s := range p.scripted[m&15] {
				left += s.left
			}
			p.Log(fmt.Sprintf("scripted failure, %d left", left))
		}
		return f
	}
	if p.Fault == nil {
		return Fault{}
	}
	f := p.Fault(m)
	if p.Log != nil && f.failing() {
		what := "injected " + f.Code.String()
		if f.Undecodable {
			what = "injected undecodable failure"
		}
		if f.After {
			what += ", after carrying the call out"
		}
		p.Log(what)
	}
	return f
}

// nextDrops returns the scripted drops of this UpdateMetadata call.
func (p *Provider) nextDrops() []string {
	if len(p.drops) == 0 {
		return nil
	}
	d := p.drops[0]
	p.drops = p.drops[1:]
	return d
}

// notFound returns the NotFound answer of a call of m about ref.
func notFound(m driverapi.Method, ref *driverapi.MachineRef) driverapi.Result {
	msg := "no instance " + ref.ProviderID
	if ref.ProviderID == "" {
		msg = "no instance for machine " + ref.Name
	}
	return driverapi.Result{Method: m, Code: driverapi.NotFound, Message: msg,
		Text: (&driverapi.StatusError{Code: driverapi.NotFound, Message: msg}).Error()}
}
