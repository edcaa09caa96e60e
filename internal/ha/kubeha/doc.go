// Package kubeha is the Kubernetes driver of internal/ha: leader election
// on a coordination.k8s.io/v1 Lease and the HA store in v1 ConfigMaps,
// every update guarded by resourceVersion (docs/high-availability.md,
// decision 1).
//
// It talks to the API server with its own small client (client.go: JSON
// over HTTPS, net/http and encoding/json), not client-go and k8s.io/api:
// client-go would double the weir binary (+34 MB) and add minutes to a
// cold build for the two kinds of object used here. Inside a pod it uses
// the in-cluster configuration (KUBERNETES_SERVICE_HOST and _PORT, the
// ServiceAccount's token, ca.crt and namespace under
// /var/run/secrets/kubernetes.io/serviceaccount; kubernetes.namespace, when
// it differs from the pod's, wins with a warning); outside one,
// high-availability.kubernetes.api-server, .token-file and .ca-file (the
// system's roots when unset). The token is read again from its file every
// minute and after a 401, since projected tokens rotate. Its
// ServiceAccount needs, in the namespace, get, create and update on
// leases (coordination.k8s.io) and get, list, create and update on
// configmaps; nothing else (the tests run the driver with exactly these).
// A connection that goes silent is dropped and dialed again (HTTP/2 pings
// after the renew deadline without a frame, TCP_USER_TIMEOUT of the lease
// duration): else every later request would hang on it, and a contender
// cut off by a partition would never lead again once it heals.
//
// # Election
//
// As client-go's leaderelection: the Lease <cluster-id>-leader is taken
// when free (no holder) or expired, that is not changed for
// leaseDurationSeconds as this process observes it (its own clock, from
// when it first saw the Lease's current resourceVersion); every update is
// guarded by resourceVersion, so of two contenders one wins. Each campaign
// uses a fresh holder identity (host name, pid, random bits) and every
// acquisition sets spec.leaseTransitions to one above the last, so the
// epoch, leaseTransitions after the acquisition, grows with every term
// (above the store's stamped epoch too, should the Lease be deleted). The
// leader renews every retry period and closes Done when no renewal
// succeeded within the renew deadline (counted from the moment the last
// successful renewal was sent), or when a renewal finds another holder.
// leaseDurationSeconds is the lease duration rounded up to whole seconds.
// The leader's LeaderInfo is the Lease's annotation weir.dev/leader-info
// (JSON), so Leader reads one object.
//
// # Store
//
// The store is four ConfigMaps <cluster-id>-store-0..3 (labelled
// weir.dev/cluster-id), a key in the one the FNV-1a hash of its encoded
// name picks: one ConfigMap holds at most 1 MiB, as few as 14 values of
// ha.MaxValueSize. A key's '/' becomes '.' in the ConfigMap key, '.'
// becomes "_." and '_' "__" (ConfigMap keys allow [-._a-zA-Z0-9]), so
// "checkpoints/j-1/latest" reads checkpoints.j-1.latest in kubectl; values
// are in binaryData (base64 in JSON: any bytes), never in data. A write
// that would make one ConfigMap hold more than 900 KiB of keys and values
// fails permanently, naming it.
//
// Fencing: before Campaign returns, the new leader stamps its epoch into
// the annotation weir.dev/leader-epoch of every store ConfigMap (creating
// the missing ones; refused if one holds a larger epoch). Every write
// (Put, Delete, Increment) reads the key's ConfigMap, fails with
// ha.ErrNotLeader if its annotation is not the term's epoch or the term is
// over by this process's clock, and writes it back guarded by the
// resourceVersion read: a write that raced the new leader's stamp
// conflicts, reads again and is refused; a conflict with the same epoch
// (the leader's own concurrent writes) is retried. So a zombie leader
// cannot write once a newer term began, whatever its clock says.
//
// The Service also implements hatest.Pauser (PauseRenewals), for the
// conformance suite's fencing and takeover cases.
package kubeha
