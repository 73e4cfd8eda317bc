package kubeshell

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Drain carries out one round of the drain of node (the lifecycle's
// KindDrain): it asks once to evict each pod a drain removes (PodsToDrain),
// or deletes it at once when force is set, and returns without waiting for
// the pods to go. An eviction a disruption budget refuses for now (429) is
// no failure: the pod stays, the next observation counts it, and the
// lifecycle asks for another round; such pods are returned in blocked, as
// "namespace/name: the API server's reason". A pod evicted already and
// going is left alone, unless force is set. A node that no longer exists
// counts as drained.
func (ns Nodes) Drain(ctx context.Context, node string, force bool) (blocked []string, err error) {
	if err := ns.Reader.Get(ctx, client.ObjectKey{Name: node}, &corev1.Node{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	pods, err := ns.PodsToDrain(ctx, node)
	if err != nil {
		return nil, err
	}
	for i := range pods {
		pod := &pods[i]
		if pod.DeletionTimestamp != nil && !force {
			continue // evicted already; going
		}
		if force {
			err := ns.Writer.Delete(ctx, pod, client.GracePeriodSeconds(0))
			if err != nil && !apierrors.IsNotFound(err) {
				return blocked, fmt.Errorf("deleting pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
			continue
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
		err := ns.Writer.SubResource("eviction").Create(ctx, pod, ev)
		switch {
		case apierrors.IsTooManyRequests(err):
			blocked = append(blocked, pod.Namespace+"/"+pod.Name+": "+strings.TrimSuffix(err.Error(), "."))
		case err != nil && !apierrors.IsNotFound(err):
			return blocked, fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	return blocked, nil
}

// PodsToDrain lists, from the API server, the pods of the node that a
// drain evicts: all but mirror pods, DaemonSet pods and pods that have
// ended (Succeeded or Failed). The lifecycle's drain is done when none is
// left (lifecycle.Node.Pods).
func (ns Nodes) PodsToDrain(ctx context.Context, node string) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := ns.Reader.List(ctx, &list, client.MatchingFields{"spec.nodeName": node}); err != nil {
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
