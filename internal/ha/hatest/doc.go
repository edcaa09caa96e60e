// Package hatest is the conformance suite every driver of internal/ha runs
// against its real service (an embedded etcd, a kube-apiserver): Run takes a
// Factory of contenders and checks, case by case, the invariants of the
// ha package's doc: one leader at a time, epochs that grow, a store whose
// writes a deposed leader cannot make, Done closed within the renew
// deadline, and takeover within twice the lease duration.
//
// It owns no production code: only tests import it. Each case uses a fresh
// cluster id (Run sets Settings.ClusterID, the factory adds what reaches its
// service), so cases do not see each other's terms or keys and may run in
// parallel; each random choice comes from internal/testseed (the seed is
// logged, WEIR_SEED reruns it) and each case has a deadline.
//
// A driver that can stop a contender's renewals without resigning or
// closing it (as SIGSTOP of its process would) implements Pauser; the
// cases that need it are skipped for a driver that does not.
package hatest
