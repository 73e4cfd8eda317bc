package lastop

import (
	"strings"
	"time"
)

// NodeCondition is a node condition with the fields MCM prints into the
// H4 and T4 descriptions ([DescUnhealthy], [DescHealthTimeout]).
type NodeCondition struct {
	// Type is the condition type, such as "Ready".
	Type string
	// Status is "True", "False" or "Unknown".
	Status string
	// LastHeartbeatTime is the condition's lastHeartbeatTime.
	LastHeartbeatTime time.Time
	// LastTransitionTime is the condition's lastTransitionTime.
	LastTransitionTime time.Time
	// Reason is the condition's reason.
	Reason string
	// Message is the condition's message.
	Message string
}

// FormatConditions returns conditions the way MCM prints a machine's
// []corev1.NodeCondition with %+v, for [Args.Conditions]:
//
//	[{Type:Ready Status:False LastHeartbeatTime:2026-08-19 09:20:30 +0000 UTC LastTransitionTime:... Reason:KubeletNotReady Message:...} {...}]
//
// Times are printed with time.Time's String in their own location, without
// a monotonic clock reading (API objects carry none). MCM prints them in its
// process's local zone, which is UTC in its container images, so pass UTC
// times for byte-equal text. No conditions give "[]".
func FormatConditions(conditions []NodeCondition) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, c := range conditions {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("{Type:")
		b.WriteString(c.Type)
		b.WriteString(" Status:")
		b.WriteString(c.Status)
		b.WriteString(" LastHeartbeatTime:")
		b.WriteString(c.LastHeartbeatTime.Round(0).String())
		b.WriteString(" LastTransitionTime:")
		b.WriteString(c.LastTransitionTime.Round(0).String())
		b.WriteString(" Reason:")
		b.WriteString(c.Reason)
		b.WriteString(" Message:")
		b.WriteString(c.Message)
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.String()
}
