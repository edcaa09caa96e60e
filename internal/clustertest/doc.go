// Package clustertest holds what tests of a multi-process cluster need
// besides the processes themselves (docs/distributed-runtime.md, "The test
// harness"): a TCP proxy per link that passes, delays with jitter (order
// kept), goes silent (no FIN, no RST: both sockets stay open and nothing
// is forwarded) or resets every connection.
//
// A userspace proxy that stops forwarding still has its kernel acknowledge
// what arrives until the socket buffers fill, so Silence tests detection by
// the application (heartbeats), not by TCP retransmission timeouts; those
// need kernel partitions (network namespaces and nftables, a later slice).
package clustertest
