// Package tcpopt sets the socket options Weir's connections share and Go's
// net package does not: TCP_USER_TIMEOUT (Linux), so that sent data or
// keepalive probes left unacknowledged abort a connection in seconds
// (docs/distributed-runtime.md, decision 23). The control plane
// (internal/rpc) and the data plane (internal/network/tcp) both use it; it
// imports only the standard library and golang.org/x/sys/unix. Read gives
// a connection's options as the kernel reports them, and Probe those of
// both ends of a connection a listener and a dialer make: each user checks
// its own settings with it.
package tcpopt
