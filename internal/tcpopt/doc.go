// Package tcpopt sets the socket options Weir's connections share and Go's
// net package does not: TCP_USER_TIMEOUT (Linux), so that sent data or
// keepalive probes left unacknowledged abort a connection in seconds
// (docs/distributed-runtime.md, decision 23). The control plane
// (internal/rpc) and the data plane (internal/network/tcp) both use it; it
// imports only the standard library and golang.org/x/sys/unix.
package tcpopt
