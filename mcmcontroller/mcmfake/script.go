package mcmfake

import (
	"context"
	"errors"
	"slices"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/codes"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/status"
)

// Method names a method of MCM's driver.Driver.
type Method string

// The methods of MCM's driver.Driver, by their names.
const (
	// MethodCreate is CreateMachine.
	MethodCreate Method = "CreateMachine"
	// MethodInitialize is InitializeMachine.
	MethodInitialize Method = "InitializeMachine"
	// MethodGetStatus is GetMachineStatus.
	MethodGetStatus Method = "GetMachineStatus"
	// MethodDelete is DeleteMachine.
	MethodDelete Method = "DeleteMachine"
	// MethodList is ListMachines.
	MethodList Method = "ListMachines"
	// MethodGetVolumeIDs is GetVolumeIDs.
	MethodGetVolumeIDs Method = "GetVolumeIDs"
)

// Call is the record of one call of the fake.
type Call struct {
	// Method is the method called.
	Method Method
	// Machine is the name of the request's machine, "" for ListMachines,
	// GetVolumeIDs and a request without a machine.
	Machine string
	// ProviderID is the request's machine's spec.providerID, "" when it
	// had none.
	ProviderID string
	// Instance is the providerID of the instance the call found, made or
	// deleted, "" when there was none (or the call failed before looking).
	Instance string
	// Code is the code of the answer: OK for success, the status error's
	// code otherwise (Unknown for an error of a hook that is not one).
	Code codes.Code
	// Err is the error answered, nil for success.
	Err error
}

// Hook answers a call instead of the fake: an error it returns is the
// call's answer, and the call is not carried out; nil lets the fake carry
// it out. It sees the call as recorded so far (Method, Machine,
// ProviderID). It is called without the fake's lock held, so it may call
// the fake's other methods, and must be safe for concurrent use when the
// fake is used concurrently.
type Hook func(c Call) error

// target is what a scripted code is for: a method, and a machine name or
// "" for any machine.
type target struct {
	method  Method
	machine string
}

// FailNext queues codes for the next calls of m about the named machine,
// one code per call, in order; with machine "", for the next calls of m
// about any machine (the only way to script ListMachines and GetVolumeIDs,
// which name none). A call takes the first code queued for its machine,
// else the first queued for any machine. A code other than OK makes the
// call answer an MCM status error of that code without being carried out;
// OK lets the call through, so a test can script "fail, succeed, fail".
func (d *Driver) FailNext(m Method, machine string, cs ...codes.Code) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	t := target{m, machine}
	d.scripts[t] = append(d.scripts[t], cs...)
}

// WithholdNodeName makes the next n CreateMachine calls of the named
// machine make (or find) its instance as usual but answer without the
// node name, as a provider that cannot name it yet does.
func (d *Driver) WithholdNodeName(machine string, n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	if d.withheld == nil {
		d.withheld = map[string]int{}
	}
	d.withheld[machine] += n
}

// SetHook installs h for every call of m that no queued code answers; a
// nil h removes it.
func (d *Driver) SetHook(m Method, h Hook) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	if h == nil {
		delete(d.hooks, m)
		return
	}
	d.hooks[m] = h
}

// Calls returns the record of every call so far, in the order they were
// answered.
func (d *Driver) Calls() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

// Count returns how many calls of m about the named machine were made;
// with machine "", about any machine.
func (d *Driver) Count(m Method, machine string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.calls {
		if c.Method == m && (machine == "" || c.Machine == machine) {
			n++
		}
	}
	return n
}

// errBadRequest is the answer to a request the fake cannot read: nil, or
// without the machine it must name.
var errBadRequest = status.Error(codes.InvalidArgument, "mcmfake: no request, or no machine in it")

// serve answers one call c: an unreadable request (bad), a canceled
// context, a queued code or the hook answer it; else do carries it out
// with the lock held and returns the providerID of the instance it
// touched. The call is recorded with its answer.
func (d *Driver) serve(ctx context.Context, c *Call, bad bool, do func() (string, error)) error {
	d.mu.Lock()
	d.init()
	err := d.precheck(ctx, c, bad)
	h := d.hooks[c.Method]
	if err == nil && h != nil {
		d.mu.Unlock()
		err = h(*c)
		d.mu.Lock()
	}
	if err == nil {
		c.Instance, err = do()
	}
	c.Err = err
	c.Code = codes.OK
	if err != nil {
		c.Code = codes.Unknown
		if st, ok := errors.AsType[*status.Status](err); ok && st != nil {
			c.Code = st.Code()
		}
	}
	d.calls = append(d.calls, *c)
	d.mu.Unlock()
	return err
}

// precheck returns the answer of a call that is not carried out (an
// unreadable request, a canceled context, a queued code), or nil. It
// takes the queued code. It is called with mu held.
func (d *Driver) precheck(ctx context.Context, c *Call, bad bool) error {
	if bad {
		return errBadRequest
	}
	if err := ctx.Err(); err != nil {
		code := codes.Canceled
		if errors.Is(err, context.DeadlineExceeded) {
			code = codes.DeadlineExceeded
		}
		return status.Error(code, "mcmfake: "+err.Error())
	}
	code, ok := d.take(target{c.Method, c.Machine})
	if !ok && c.Machine != "" {
		code, ok = d.take(target{c.Method, ""})
	}
	if !ok || code == codes.OK {
		return nil
	}
	return status.Error(code, "mcmfake: scripted "+code.String()+" for "+string(c.Method))
}

// take pops the first code queued for t. It is called with mu held.
func (d *Driver) take(t target) (codes.Code, bool) {
	q := d.scripts[t]
	if len(q) == 0 {
		return codes.OK, false
	}
	if len(q) == 1 {
		delete(d.scripts, t)
	} else {
		d.scripts[t] = q[1:]
	}
	return q[0], true
}

// callAbout starts the record of a call of m about machine m.
func callAbout(method Method, m *v1alpha1.Machine) Call {
	c := Call{Method: method}
	if m != nil {
		c.Machine, c.ProviderID = m.Name, m.Spec.ProviderID
	}
	return c
}

// className returns the class's name, "" for no class.
func className(c *v1alpha1.MachineClass) string {
	if c == nil {
		return ""
	}
	return c.Name
}
