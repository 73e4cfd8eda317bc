package machines

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/lifecycle"
)

// drain carries out one round of the drain of the effect's node: it asks
// once to evict each pod a drain removes (deletes it when forced), leaving
// DaemonSet and mirror pods, and returns without waiting for the pods to
// go. An eviction a disruption budget refuses for now (429) is no failure:
// the pod stays, the next observation counts it (Node.Pods), and the
// lifecycle asks for another round. A node that no longer exists counts
// as drained. The pods whose eviction a budget refuses are told in a
// Warning event ReasonEvictionBlocked on the machine, at most once per
// machine per repeatInterval: the lifecycle's wait says only that the
// node's pods have not gone.
func (r *Reconciler) drain(ctx context.Context, p *pass, e lifecycle.Effect) (lifecycle.Write, error) {
	if err := r.reader.Get(ctx, client.ObjectKey{Name: e.Node}, &corev1.Node{}); err != nil {
		if apierrors.IsNotFound(err) {
			return lifecycle.WriteOK, nil
		}
		return lifecycle.WriteFailed, err
	}
	pods, err := r.podsToDrain(ctx, e.Node)
	if err != nil {
		return lifecycle.WriteFailed, err
	}
	var blocked []string // "ns/name: the API server's reason"
	defer func() { r.evictionBlocked(p, e.Node, blocked) }()
	for i := range pods {
		pod := &pods[i]
		if pod.DeletionTimestamp != nil && !e.Force {
			continue // evicted already; going
		}
		if e.Force {
			err := r.client.Delete(ctx, pod, client.GracePeriodSeconds(0))
			if err != nil && !apierrors.IsNotFound(err) {
				return lifecycle.WriteFailed, fmt.Errorf("deleting pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
			continue
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
		err := r.client.SubResource("eviction").Create(ctx, pod, ev)
		if apierrors.IsTooManyRequests(err) {
			blocked = append(blocked, pod.Namespace+"/"+pod.Name+": "+strings.TrimSuffix(err.Error(), "."))
		}
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsTooManyRequests(err) {
			return lifecycle.WriteFailed, fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	return lifecycle.WriteOK, nil
}

// podsToDrain lists the pods of the node that a drain evicts.
func (r *Reconciler) podsToDrain(ctx context.Context, node string) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.reader.List(ctx, &list, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return nil, err
	}
	pods := list.Items[:0]
	for _, p := range list.Items {
		if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
			continue
		}
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "DaemonSet" {
			continue
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		pods = append(pods, p)
	}
	return pods, nil
}

// ReasonEvictionBlocked is the reason of the Warning event recorded on a
// machine whose node's drain a disruption budget holds up: the pods whose
// eviction was refused, and why.
const ReasonEvictionBlocked = "EvictionBlocked"

// maxBlockedPods is how many refused pods an EvictionBlocked event names.
const maxBlockedPods = 3

// evictionBlocked records, at most once per machine per repeatInterval,
// that the evictions of blocked (at least one) were refused.
func (r *Reconciler) evictionBlocked(p *pass, node string, blocked []string) {
	if len(blocked) == 0 || p == nil || p.m == nil || !r.repeats.allow(string(p.m.UID)+"/eviction-blocked", r.now()) {
		return
	}
	more := ""
	if n := len(blocked) - maxBlockedPods; n > 0 {
		blocked, more = blocked[:maxBlockedPods], fmt.Sprintf("; and %d more", n)
	}
	p.log.Info("evictions refused for now; the drain goes on", "node", node, "pods", blocked)
	r.recorder.Eventf(p.m, nil, corev1.EventTypeWarning, ReasonEvictionBlocked, "Drain",
		"%s", cutNote(fmt.Sprintf("The drain of node %s waits: evicting %s%s. It is asked again every round until the drain timeout forces it.",
			node, strings.Join(blocked, "; "), more)))
}
