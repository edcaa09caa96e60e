package testport

import (
	"net"
	"strconv"
	"testing"
)

// Free's ports are distinct, free to bind, and outside the ephemeral
// range, where no outgoing connection of a parallel test binary can take
// them.
func TestFreeOutsideEphemeralRange(t *testing.T) {
	lo, hi := EphemeralRange()
	for range 20 {
		ports, err := Free(3)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for _, p := range ports {
			if p >= lo && p <= hi || seen[p] {
				t.Fatalf("Free(3) = %v: %d is inside the ephemeral range %d-%d or repeated", ports, p, lo, hi)
			}
			seen[p] = true
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				t.Fatalf("port %d is not free: %v", p, err)
			}
			l.Close()
		}
	}
}
