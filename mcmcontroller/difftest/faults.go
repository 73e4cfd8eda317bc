package difftest

import (
	"context"
	"fmt"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// The API server refuses writes a scenario asks it to refuse through a
// ValidatingAdmissionPolicy that denies whatever its bindings match: a
// binding per refused write names the node, the resource (nodes, or
// nodes/status) and the operation. So a controller's node write fails as
// it would against an API server that refuses it, and both controllers
// meet the same refusal with the same message.
const (
	// denyPolicy names the policy.
	denyPolicy = "difftest-deny"
	// denyMessage is the message of every refusal.
	denyMessage = "refused by the scenario"
	// faultLabel labels the bindings, which clearCluster deletes.
	faultLabel = "difftest.purelifecycle.dev/fault"
)

// DenyNode makes the API server refuse op ("UPDATE" or "DELETE") on the
// named node's resource ("nodes" for the object, "nodes/status" for its
// status) until AllowNodes.
func DenyNode(node, resource string, op admissionv1.OperationType) Action {
	return Action{Name: fmt.Sprintf("API server refuses %s of %s %s", op, resource, node), Do: func(ctx context.Context, e *Env) error {
		return e.denyNode(ctx, node, resource, op)
	}}
}

// AllowNodes lifts every refusal of DenyNode.
func AllowNodes() Action {
	return Action{Name: "API server refuses nothing", Do: func(ctx context.Context, e *Env) error {
		return e.allowNodes(ctx)
	}}
}

// ensureDenyPolicy creates the policy unless it exists.
func ensureDenyPolicy(ctx context.Context, core kubernetes.Interface) error {
	fail := admissionv1.Fail
	_, err := core.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: denyPolicy},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update, admissionv1.Delete},
					Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
						Resources: []string{"nodes", "nodes/status"}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: "false", Message: denyMessage}},
		},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// denyNode binds the policy to op on the node's resource and waits until
// the API server refuses it.
func (e *Env) denyNode(ctx context.Context, node, resource string, op admissionv1.OperationType) error {
	if err := ensureDenyPolicy(ctx, e.Core); err != nil {
		return err
	}
	name := strings.ToLower(fmt.Sprintf("%s-%s-%s-%s", denyPolicy, node, strings.ReplaceAll(resource, "/", "-"), op))
	_, err := e.Core.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{faultLabel: "true"}},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        denyPolicy,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				ResourceNames: []string{node},
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{op},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{resource}},
				},
			}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	// The API server applies a new binding after a moment: a dry run of
	// the write tells when.
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := tryNodeWrite(ctx, e.Core, node, resource, op)
		return err != nil && strings.Contains(err.Error(), denyMessage), nil
	})
}

// allowNodes lifts every refusal.
func (e *Env) allowNodes(ctx context.Context) error { return liftFaults(ctx, e.Core) }

// liftFaults deletes every binding of the policy and waits until the API
// server lets the writes they refused through again, creating a node a
// binding names when it is gone, to probe it (clearCluster deletes it).
func liftFaults(ctx context.Context, core kubernetes.Interface) error {
	list, err := core.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().List(ctx,
		metav1.ListOptions{LabelSelector: faultLabel})
	if err != nil {
		return err
	}
	if err := core.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: faultLabel}); err != nil {
		return err
	}
	for _, b := range list.Items {
		for _, r := range b.Spec.MatchResources.ResourceRules {
			node := r.ResourceNames[0]
			_, err := core.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			for _, op := range r.Operations {
				err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
					err := tryNodeWrite(ctx, core, node, r.Resources[0], op)
					return err == nil || !strings.Contains(err.Error(), denyMessage), nil
				})
				if err != nil {
					return fmt.Errorf("a refusal of %s of %s %s lingers: %w", op, r.Resources[0], node, err)
				}
			}
		}
	}
	return nil
}

// tryNodeWrite makes op on the node's resource as a dry run.
func tryNodeWrite(ctx context.Context, core kubernetes.Interface, node, resource string, op admissionv1.OperationType) error {
	dry := []string{metav1.DryRunAll}
	if op == admissionv1.Delete {
		return core.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{DryRun: dry})
	}
	n, err := core.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if resource == "nodes/status" {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "DifftestProbe", Status: corev1.ConditionTrue})
		_, err = core.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{DryRun: dry})
		return err
	}
	metav1.SetMetaDataAnnotation(&n.ObjectMeta, "difftest.purelifecycle.dev/probe", "1")
	_, err = core.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{DryRun: dry})
	return err
}
