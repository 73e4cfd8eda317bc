package machines

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/lifecycle"
)

// drain evicts the pods of the effect's node (deletes them when forced),
// leaving DaemonSet and mirror pods, retrying an eviction a disruption
// budget refuses at most e.Retries times, and waits for the pods to go,
// all within e.Timeout. A node that no longer exists counts as drained.
// It blocks the reconcile while it runs, as MCM's drain does.
func (r *Reconciler) drain(ctx context.Context, e lifecycle.Effect) (lifecycle.Write, error) {
	if e.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.Timeout)
		defer cancel()
	}
	if err := r.Reader.Get(ctx, client.ObjectKey{Name: e.Node}, &corev1.Node{}); err != nil {
		if apierrors.IsNotFound(err) {
			return lifecycle.WriteOK, nil
		}
		return lifecycle.WriteFailed, err
	}
	pods, err := r.podsToDrain(ctx, e.Node)
	if err != nil {
		return lifecycle.WriteFailed, err
	}
	interval := r.EvictRetryInterval
	if interval <= 0 {
		interval = r.Config.EvictRetryInterval
	}
	for i := range pods {
		pod := &pods[i]
		if e.Force {
			err := r.Client.Delete(ctx, pod, client.GracePeriodSeconds(0))
			if err != nil && !apierrors.IsNotFound(err) {
				return lifecycle.WriteFailed, fmt.Errorf("deleting pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
			continue
		}
		for try := int32(0); ; try++ {
			ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
			err := r.Client.SubResource("eviction").Create(ctx, pod, ev)
			if err == nil || apierrors.IsNotFound(err) {
				break
			}
			if !apierrors.IsTooManyRequests(err) || try >= e.Retries {
				return lifecycle.WriteFailed, fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
			select {
			case <-ctx.Done():
				return lifecycle.WriteFailed, fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, ctx.Err())
			case <-time.After(interval):
			}
		}
	}
	// Wait for the pods to go.
	for {
		left := 0
		for i := range pods {
			var p corev1.Pod
			err := r.Reader.Get(ctx, client.ObjectKeyFromObject(&pods[i]), &p)
			if err == nil && p.UID == pods[i].UID {
				left++
			} else if err != nil && !apierrors.IsNotFound(err) {
				return lifecycle.WriteFailed, err
			}
		}
		if left == 0 {
			return lifecycle.WriteOK, nil
		}
		select {
		case <-ctx.Done():
			return lifecycle.WriteFailed, fmt.Errorf("drain of node %s timed out with %d pods left", e.Node, left)
		case <-time.After(time.Second):
		}
	}
}

// podsToDrain lists the pods of the node that a drain evicts.
func (r *Reconciler) podsToDrain(ctx context.Context, node string) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.Reader.List(ctx, &list, client.MatchingFields{"spec.nodeName": node}); err != nil {
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
