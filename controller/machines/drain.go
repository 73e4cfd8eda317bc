package machines

import (
	"context"
	"fmt"

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
// as drained.
func (r *Reconciler) drain(ctx context.Context, e lifecycle.Effect) (lifecycle.Write, error) {
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
