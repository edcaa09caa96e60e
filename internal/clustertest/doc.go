// Package clustertest holds what tests of a multi-process cluster need
// besides the processes themselves (docs/distributed-runtime.md, "The test
// harness"): a TCP proxy per link that passes, delays with jitter (order
// kept), goes silent (no FIN, no RST: both sockets stay open and nothing
// is forwarded) or resets every connection.
//
// A userspace proxy that stops forwarding still has its kernel acknowledge
// what arrives until the socket buffers fill, so Silence tests detection by
// the application (heartbeats), not by TCP retransmission timeouts; those
// need kernel partitions.
//
// Kernel partitions (Linux, root, `ip` and `nft`; NeedNetns skips or, under
// CI, fails without them): NewNet builds hosts, each a network namespace
// with one IPv4 address, on a bridge in a switch namespace of their own
// (so Nets never collide); Host.Command runs a program in a host under its
// own PID, Host.DialContext dials from one. Net.Partition and Net.Drop add
// nftables drop rules on the switch for a pair's packets, both ways or
// one: silent, so only TCP_USER_TIMEOUT, keepalive or heartbeats notice;
// Net.Heal removes them. The Net's cleanup deletes every namespace and
// fails the test if a process was left in one.
package clustertest
