//go:build !amd64 && !arm64

package prefetch

// Lines does nothing on this architecture.
func Lines(addrs []uintptr) {}
