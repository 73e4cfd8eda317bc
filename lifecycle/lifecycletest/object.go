package lifecycletest

import "github.com/purelifecycle/machine/lifecycle"

// ApplyToObject carries out e on o, an in-memory machine object, when e is
// one of the effects on the object (the ensure-effects and the removal of
// the finalizer), as a shell's successful write would, and reports whether
// it was. Removing the finalizer of an object whose deletion was requested
// deletes the object: gone reports that. Every in-memory world of the
// project writes the object through it.
func ApplyToObject(o *lifecycle.Object, e *lifecycle.Effect) (applied, gone bool) {
	switch e.Kind {
	case lifecycle.KindEnsureFinalizer:
		o.Finalizer = true
	case lifecycle.KindRemoveFinalizer:
		o.Finalizer = false
		return true, !o.DeletionTime.IsZero()
	case lifecycle.KindEnsureNodeLabel:
		o.NodeLabel = e.Value
	case lifecycle.KindEnsurePriority:
		o.Priority = e.Value
	case lifecycle.KindEnsureProviderID:
		o.ProviderID = e.Value
	default:
		return false, false
	}
	return true, false
}
