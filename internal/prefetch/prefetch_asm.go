//go:build amd64 || arm64

package prefetch

// Lines prefetches the cache line of each address into every cache level.
// The addresses are only hints: any value is safe, mapped or not.
//
//go:noescape
func Lines(addrs []uintptr)
