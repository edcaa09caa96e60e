package crashpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// EnvVar names the point to crash at, as NAME or NAME:N.
const EnvVar = "WEIR_CRASH_AT"

var (
	once   sync.Once
	target string // the armed point's name; "" when none
	nth    int64  // crash at this hit of the armed point
	hits   atomic.Int64
)

func load() {
	v := os.Getenv(EnvVar)
	if v == "" {
		return
	}
	name, n, ok := strings.Cut(v, ":")
	nth = 1
	if ok {
		k, err := strconv.ParseInt(n, 10, 64)
		if err != nil || k < 1 {
			fmt.Fprintf(os.Stderr, "weir: %s=%q: the count after ':' must be a positive integer; no crash point armed\n", EnvVar, v)
			return
		}
		nth = k
	}
	target = name
}

// Hit marks that the point name was reached; it kills the process when
// WEIR_CRASH_AT arms this point and this is the armed hit.
func Hit(name string) {
	once.Do(load)
	if target == "" || target != name {
		return
	}
	if hits.Add(1) != nth {
		return
	}
	fmt.Fprintf(os.Stderr, "weir: crash point %s reached (hit %d): killing the process\n", name, nth)
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL is not delivered synchronously; never return
}
