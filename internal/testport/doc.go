// Package testport picks loopback ports for servers that tests start as
// separate processes (Kafka brokers, a kube-apiserver and its etcd): ports
// nothing listens on, outside the kernel's range of ephemeral ports, which
// outgoing connections of test binaries running in parallel could take
// between the pick and the server's bind.
package testport
