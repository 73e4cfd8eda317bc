package lifecycletest

import (
	"fmt"
	"strings"

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

// fail writes into *r the answer of a call of m that f fails, as
// driverapi.ResultOf gives it for the error.
func (f *Fault) fail(r *driverapi.Result, m driverapi.Method) {
	msg := f.Message
	if msg == "" {
		msg = "injected failure of " + m.String()
	}
	if f.Undecodable || f.Code == driverapi.OK {
		*r = driverapi.Result{Method: m, Code: driverapi.Unknown, Undecodable: true, Message: msg, Text: msg}
		return
	}
	text := f.Text
	if text == "" {
		text = (&driverapi.StatusError{Code: f.Code, Message: msg}).Error()
	}
	*r = driverapi.Result{Method: m, Code: f.Code, Message: msg, Text: text}
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

// notFound writes into *r the NotFound answer of a call of m about ref.
func notFound(r *driverapi.Result, m driverapi.Method, ref *driverapi.MachineRef) {
	if ref.ProviderID == "" {
		failure(r, m, driverapi.NotFound, "no instance for machine ", ref.Name, "")
		return
	}
	failure(r, m, driverapi.NotFound, "no instance ", ref.ProviderID, "")
}

// wireHeads holds, for each code, the text of its status error up to the
// message: the text of a status error is that, the message and "]".
// Never written.
var wireHeads = func() (h [32]string) {
	for c := driverapi.Code(1); int(c) < len(h); c++ {
		h[c] = strings.TrimSuffix(driverapi.Error(c, "").Error(), "]")
	}
	return h
}()

// failure writes into *r the answer of a call of m failing with code and
// the message a+b+c, as driverapi.ResultOf gives it for the status error,
// in one allocation: the message is a substring of the text.
func failure(r *driverapi.Result, m driverapi.Method, code driverapi.Code, a, b, c string) {
	head := wireHeads[code&31]
	text := head + a + b + c + "]"
	*r = driverapi.Result{Method: m, Code: code, Message: text[len(head) : len(text)-1], Text: text}
}
