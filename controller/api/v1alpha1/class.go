package v1alpha1

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// MachineClass is the provider configuration that machines name in
// spec.class: the provider spec every driver call is handed, the Secret
// with the provider's credentials and the instance's user data, and the
// node template. Machines read the class of their own namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mcc
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.secretRef.name`,description="Secret with the credentials and user data."
// +kubebuilder:printcolumn:name="Instance Type",type=string,JSONPath=`.nodeTemplate.instanceType`,description="Instance type of the node template."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MachineClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// ProviderSpec is the provider's machine configuration, handed to
	// every driver call as its JSON, unread by the controller.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	ProviderSpec runtime.RawExtension `json:"providerSpec,omitempty"`
	// SecretRef names the Secret, in the class's namespace, whose data
	// every driver call is handed: the provider's credentials, and the
	// instance's user data under the key userData. A machine whose class
	// names a Secret that does not exist waits until it does.
	// +optional
	SecretRef *corev1.LocalObjectReference `json:"secretRef,omitempty"`
	// NodeTemplate describes the node an instance of the class becomes.
	// When set, it must name the instance type, region and zone and give
	// the CPU and memory capacity; a machine whose class holds an invalid
	// template waits until it is fixed.
	// +optional
	NodeTemplate *NodeTemplate `json:"nodeTemplate,omitempty"`
}

// MachineClassList is a list of MachineClasses.
//
// +kubebuilder:object:root=true
type MachineClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the classes.
	Items []MachineClass `json:"items"`
}

// NodeTemplate describes the node of an instance, as MCM's node template
// does.
type NodeTemplate struct {
	// Capacity is the node's capacity: cpu and memory at least.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// InstanceType is the provider's instance type.
	// +optional
	InstanceType string `json:"instanceType,omitempty"`
	// Region of the instance.
	// +optional
	Region string `json:"region,omitempty"`
	// Zone of the instance.
	// +optional
	Zone string `json:"zone,omitempty"`
}

// Validate returns what is wrong with the template, nil when nothing: the
// instance type, region and zone must be set, and the capacity must give
// cpu and memory above zero.
func (t *NodeTemplate) Validate() error {
	var errs []error
	for _, f := range []struct{ name, value string }{
		{"instanceType", t.InstanceType}, {"region", t.Region}, {"zone", t.Zone},
	} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("nodeTemplate.%s is empty", f.name))
		}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := t.Capacity[r]; !ok || q.Sign() <= 0 {
			errs = append(errs, fmt.Errorf("nodeTemplate.capacity.%s is not above zero", r))
		}
	}
	return errors.Join(errs...)
}
