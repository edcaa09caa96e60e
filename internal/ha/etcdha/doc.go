// Package etcdha is the etcd driver of internal/ha
// (docs/high-availability.md, decision 1): New connects a contender to the
// etcd servers of high-availability.etcd.endpoints.
//
// It owns the keys of one cluster id in etcd: the election under
// /weir/<cluster-id>/leader/ (go.etcd.io/etcd/client/v3/concurrency, one key
// per campaign, attached to the campaign's lease, holding the LeaderInfo as
// JSON) and the store under /weir/<cluster-id>/store/<key>.
//
// # Invariants
//
//   - A term's epoch is its election key's create revision. Each campaign
//     takes a new lease, so a new term has a new key and a larger revision
//     than every earlier term of the cluster id.
//   - Every store write is one transaction If(CreateRevision(election key)
//     == epoch): once the key is gone (resigned, lease revoked or expired),
//     the write fails with ha.ErrNotLeader, whatever the writer believes.
//     Increment also compares the counter's mod revision, and retries when
//     only that compare failed (a concurrent increment of the same term).
//   - The lease's TTL is the lease duration in whole seconds (rounded up,
//     at least 1). The leader renews it itself every retry period, one
//     request each, and closes Done when no renewal succeeded within the
//     renew deadline (counted from when the last successful one was sent,
//     so before the lease can expire on the server), or when etcd says the
//     lease is gone (a renewal's answer, or the end of the session's
//     keepalive stream). A term that ends so revokes its lease in the
//     background, so the next leader need not wait for it to expire.
//   - Connection errors name the endpoints and high-availability.etcd.endpoints;
//     New fails when no endpoint answers within its dial timeout (5 s).
package etcdha
