package testport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Picked ports lie in [first, first+span).
const first, span = 20000, 30000

// Free picks n distinct ports on 127.0.0.1 that nothing listens on, outside
// the ephemeral range.
func Free(n int) ([]int, error) {
	lo, hi := EphemeralRange()
	var ports []int
	for i := 0; i < 100*n && len(ports) < n; i++ {
		p := first + rand.IntN(span)
		if p >= lo && p <= hi {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		dup := false
		for _, q := range ports {
			dup = dup || q == p
		}
		if !dup {
			ports = append(ports, p)
		}
	}
	if len(ports) < n {
		return nil, fmt.Errorf("testport: no %d free ports in %d-%d outside the ephemeral range %d-%d", n, first, first+span-1, lo, hi)
	}
	return ports, nil
}

// EphemeralRange is the kernel's range of ports for outgoing connections
// (Linux's default when it cannot be read).
func EphemeralRange() (lo, hi int) {
	lo, hi = 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return lo, hi
	}
	l, err1 := strconv.Atoi(f[0])
	h, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return lo, hi
	}
	return l, h
}
