package machines

import (
	"context"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/kubeshell"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/mcmcontroller/nodetemplate"
)

// The field indexes the target cluster's cache must hold (Indexes).
const (
	nodeProviderIDIndex = kubeshell.ProviderIDIndex
	vaNodeIndex         = "spec.nodeName"
)

// Index is a field index of a cache: the field's name and how an object's
// values are read.
type Index struct {
	Object  client.Object
	Field   string
	Extract client.IndexerFunc
}

// Indexes are the field indexes the target cluster's cache must hold for
// a Reconciler: nodes by spec.providerID, volume attachments by
// spec.nodeName.
func Indexes() []Index {
	return []Index{
		{&corev1.Node{}, nodeProviderIDIndex, func(o client.Object) []string { return []string{o.(*corev1.Node).Spec.ProviderID} }},
		{&storagev1.VolumeAttachment{}, vaNodeIndex, func(o client.Object) []string {
			return []string{o.(*storagev1.VolumeAttachment).Spec.NodeName}
		}},
	}
}

// findNode finds the machine's node in the target cluster's cache
// (kubeshell.FindNode).
func (r *Reconciler) findNode(ctx context.Context, m *v1alpha1.Machine, st *lifecycle.Status) (*corev1.Node, error) {
	return kubeshell.FindNode(ctx, r.c.Target, kubeshell.NodeOf{Label: m.Labels[lifecycle.NodeLabel], Recorded: st.NodeName,
		Machine: m.Name, ProviderID: st.ProviderID})
}

// volumeAttachments counts the volume attachments of the node that are
// not being deleted.
func (r *Reconciler) volumeAttachments(ctx context.Context, node string) (int, error) {
	var vas storagev1.VolumeAttachmentList
	if err := r.c.Target.List(ctx, &vas, client.MatchingFields{vaNodeIndex: node}); err != nil {
		return 0, err
	}
	n := 0
	for i := range vas.Items {
		if vas.Items[i].DeletionTimestamp == nil {
			n++
		}
	}
	return n, nil
}

// deleteVolumeAttachments deletes the volume attachments of the node (the
// lifecycle's KindDeleteVolumeAttachments). A single failure counts as
// done: the next observation counts what is left.
func (p *pass) deleteVolumeAttachments(ctx context.Context, node string) error {
	var vas storagev1.VolumeAttachmentList
	if err := p.r.c.Target.List(ctx, &vas, client.MatchingFields{vaNodeIndex: node}); err != nil {
		return err
	}
	for i := range vas.Items {
		if err := p.r.c.Target.Delete(ctx, &vas.Items[i]); err != nil && !apierrors.IsNotFound(err) {
			p.log.Info("deleting a volume attachment failed", "name", vas.Items[i].Name, "error", err.Error())
		}
	}
	return nil
}

// syncNodeTemplate keeps the node of the machine in line with the
// machine's node template and its class's virtual capacity
// (nodetemplate.Plan), as MCM's machine controller does for a machine
// with a node. The node is read from the API server; its status is written
// first, then the node. A failure is logged: the next pass tries again.
func (p *pass) syncNodeTemplate(ctx context.Context) {
	name := p.m.Labels[lifecycle.NodeLabel]
	if name == "" || p.r.noTarget {
		return
	}
	ctx, cancel := p.io(ctx)
	defer cancel()
	cr := p.classOf(ctx)
	if cr.problem != lifecycle.ProblemNone {
		return
	}
	node := &corev1.Node{}
	if err := p.r.c.TargetReader.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return
	}
	var capacity corev1.ResourceList
	if t := cr.class.NodeTemplate; t != nil {
		capacity = t.VirtualCapacity
	}
	sync, err := nodetemplate.Plan(&p.m.Spec.NodeTemplateSpec, capacity, node)
	if err != nil {
		p.log.Info("the node template cannot be applied", "node", name, "error", err.Error())
		return
	}
	n := sync.Node
	if sync.UpdateStatus {
		// The status write returns the node with its old metadata and
		// spec: the planned ones go on.
		want := n.DeepCopy()
		if err := p.r.c.Target.Status().Update(ctx, n); err != nil {
			p.log.Info("writing the node's capacity failed", "node", name, "error", err.Error())
			return
		}
		n.Labels, n.Annotations, n.Spec = want.Labels, want.Annotations, want.Spec
	}
	if sync.Update || sync.UpdateStatus {
		if err := p.r.c.Target.Update(ctx, n); err != nil {
			p.log.Info("applying the node template failed", "node", name, "error", err.Error())
		}
	}
}
