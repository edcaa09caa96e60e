package kubeha

import (
	"fmt"
	"strings"
	"time"
)

// The two objects of a cluster id, and the annotations Weir keeps on them.
const (
	// annotationEpoch on each store ConfigMap holds the epoch of the
	// leader that may write it (decimal).
	annotationEpoch = "weir.dev/leader-epoch"
	// annotationLeader on the Lease holds the leader's LeaderInfo (JSON).
	annotationLeader = "weir.dev/leader-info"
	// labelCluster on both objects holds the cluster id (kubectl get -l).
	labelCluster = "weir.dev/cluster-id"
)

func leaseName(clusterID string) string { return clusterID + "-leader" }

// objectMeta is the part of Kubernetes' ObjectMeta Weir reads and writes.
// Updates send back what was read (PUT), so fields Weir does not model are
// lost only if they are in neither this struct nor the API's defaults:
// the two objects are Weir's own.
type objectMeta struct {
	Name            string            `json:"name"`
	Namespace       string            `json:"namespace,omitempty"`
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	UID             string            `json:"uid,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	Annotations     map[string]string `json:"annotations,omitempty"`
}

// lease is a coordination.k8s.io/v1 Lease.
type lease struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
	Spec       leaseSpec  `json:"spec"`
}

type leaseSpec struct {
	HolderIdentity       *string `json:"holderIdentity,omitempty"`
	LeaseDurationSeconds *int32  `json:"leaseDurationSeconds,omitempty"`
	AcquireTime          *string `json:"acquireTime,omitempty"` // MicroTime
	RenewTime            *string `json:"renewTime,omitempty"`   // MicroTime
	LeaseTransitions     *int32  `json:"leaseTransitions,omitempty"`
}

func (l *lease) holder() string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func (l *lease) transitions() int32 {
	if l.Spec.LeaseTransitions == nil {
		return 0
	}
	return *l.Spec.LeaseTransitions
}

// duration is the lease's term past its renew time (zero when unset).
func (l *lease) duration() time.Duration {
	if l.Spec.LeaseDurationSeconds == nil {
		return 0
	}
	return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
}

// microTime formats t as Kubernetes' MicroTime (RFC 3339, microseconds,
// UTC), which the API server parses strictly.
func microTime(t time.Time) *string {
	s := t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
	return &s
}

// leaseSeconds is d in whole seconds for leaseDurationSeconds, rounded up:
// contenders then wait at least d before they take an unrenewed lease.
func leaseSeconds(d time.Duration) *int32 {
	s := int32((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return &s
}

// configMap is a v1 ConfigMap. The store keeps its values in binaryData
// (base64 in JSON, any bytes) and never uses data.
type configMap struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   objectMeta        `json:"metadata"`
	Data       map[string]string `json:"data,omitempty"`
	BinaryData map[string][]byte `json:"binaryData,omitempty"`
}

// maxStoreBytes bounds the store's keys and values in all: a ConfigMap
// holds at most 1 MiB (keys and values of data and binaryData), and the
// rest is room for the object's metadata.
const maxStoreBytes = 900 << 10

// size is what the API server counts against its 1 MiB bound.
func (c *configMap) size() int {
	n := 0
	for k, v := range c.Data {
		n += len(k) + len(v)
	}
	for k, v := range c.BinaryData {
		n += len(k) + len(v)
	}
	return n
}

// ConfigMap keys allow only [-._a-zA-Z0-9] (at most 253 bytes), store keys
// also '/'. encodeKey maps '/' to '.', '.' to "_." and '_' to "__", so
// "checkpoints/j-1/latest" reads "checkpoints.j-1.latest" in kubectl, and
// every encoding decodes back to its key (a '_' always starts a pair).
func encodeKey(key string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		switch c := key[i]; c {
		case '/':
			b.WriteByte('.')
		case '.':
			b.WriteString("_.")
		case '_':
			b.WriteString("__")
		default:
			b.WriteByte(c)
		}
	}
	if b.Len() > 253 {
		return "", fmt.Errorf("HA store key %q: its ConfigMap key would be %d bytes, above Kubernetes' 253 (each '.' and '_' takes two)", key, b.Len())
	}
	return b.String(), nil
}

// decodeKey undoes encodeKey; ok is false for a key encodeKey does not
// make (another writer's), which the store ignores.
func decodeKey(enc string) (key string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(enc); i++ {
		switch c := enc[i]; c {
		case '.':
			b.WriteByte('/')
		case '_':
			if i+1 == len(enc) {
				return "", false
			}
			i++
			switch enc[i] {
			case '.':
				b.WriteByte('.')
			case '_':
				b.WriteByte('_')
			default:
				return "", false
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}
