// Package ha elects one leader among a cluster's JobManagers and keeps the
// small metadata store that only the leader may write (docs/high-availability.md).
//
// It owns the contract the drivers implement (Service, Leadership, Store),
// the settings that choose and tune a driver (Settings, Flink's
// high-availability.* names), and the errors callers tell apart
// (ErrNotLeader, ErrNotFound). The drivers live in subpackages: etcdha
// (an etcd election, writes in transactions guarded by the election key's
// create revision) and kubeha (a Lease and ConfigMaps guarded by
// resourceVersion and the leader-epoch annotation).
//
// # Invariants
//
//   - Epochs grow: a Leadership's Epoch is greater than that of every
//     earlier term of the same cluster id, whoever held it.
//   - A Store write succeeds only while its term holds: once another
//     contender could have won (the lease expired, the key was deleted), a
//     write of the old term fails with ErrNotLeader, whatever the old
//     leader's clock says.
//   - Done closes no later than the renew deadline after the last
//     successful renewal, which is before the lease can expire for others:
//     a leader that watches Done stops acting while its term is still its own.
package ha
