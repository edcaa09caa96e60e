// Package etcdtest runs a real etcd server for tests: Start embeds one
// (go.etcd.io/etcd/server/v3/embed) in the test process, a single member
// on free loopback ports with its data in t.TempDir(), stopped when the
// test ends.
//
// It owns only that server's life: Stop and Restart (the same data and
// ports, so clients reconnect to what they knew: the "store unreachable for
// a while" scenario). Its client URL listens on 127.0.0.1, so processes
// the test starts (JobManagers as `weir jobmanager`) reach it too. The
// server logs errors only, to a file that a failed test prints.
package etcdtest
