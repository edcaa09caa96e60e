package memory

import (
	"math"
	"os"
	"path"
	"strconv"
	"strings"
)

// The division of the process memory P (each a fraction of P):
//
//   - SoftLimit, 90%: the Go runtime's soft memory limit
//     (debug.SetMemoryLimit). The rest is for what the runtime does not
//     manage or count: the binary's text, C allocations, page tables.
//   - GuardBound, 80%: the most the live heap (objects the last collection
//     found reachable: state tables, what state values point to, records in
//     flight, network buffers) plus goroutine stacks may hold. Between it
//     and the soft limit is the room the collector needs to allocate
//     between cycles; a live heap closer to the limit makes the collector
//     run without pause.
//   - NetworkDefault, 10% up to 4 GiB (Flink's network fraction 0.1): the
//     default network memory. Network buffers are on the Go heap, so they
//     are part of the live heap the guard measures, not beside it.
//   - HeapStateDefault, 40% (Flink's managed fraction 0.4): the default
//     bound of the hashmap backend's tables.
const (
	softLimitPercent  = 90
	guardPercent      = 80
	networkPercent    = 10
	heapStatePercent  = 40
	maxDefaultNetwork = 4 << 30
)

// SoftLimit is the Go runtime's soft memory limit for process memory p.
func SoftLimit(p int64) int64 { return percent(p, softLimitPercent) }

// GuardBound is the most live heap plus stacks a job may keep under
// process memory p.
func GuardBound(p int64) int64 { return percent(p, guardPercent) }

// NetworkDefault is the network memory when p is known and none is set.
func NetworkDefault(p int64) int64 { return min(maxDefaultNetwork, percent(p, networkPercent)) }

// HeapStateDefault is the hashmap backend's bound when p is known and
// none is set.
func HeapStateDefault(p int64) int64 { return percent(p, heapStatePercent) }

func percent(p int64, pct int64) int64 { return p / 100 * pct }

// Size is a process memory size and where it came from.
type Size struct {
	Bytes int64  // 0: unknown
	From  string // the file it was read from, or "" when unknown
}

// plausible bounds a limit read from a file: "max", zero, or values from
// 2^60 up (cgroup v1 writes 2^63 rounded down to a page for none) mean no
// limit.
const plausible = 1 << 60

// Detect returns the process memory default: the memory cgroup's limit
// (v2 memory.max, v1 memory.limit_in_bytes, of the process's own cgroup or
// of the mounted root), else the machine's memory (MemTotal of
// /proc/meminfo), whichever is smaller; unknown when neither is there.
func Detect() Size { return detect(os.ReadFile) }

func detect(read func(string) ([]byte, error)) Size {
	var total Size
	if b, err := read("/proc/meminfo"); err == nil {
		if n, ok := ParseMemTotal(b); ok {
			total = Size{n, "/proc/meminfo MemTotal"}
		}
	}
	for _, file := range cgroupFiles(read) {
		b, err := read(file)
		if err != nil {
			continue
		}
		n, ok := ParseCgroupLimit(b)
		if !ok {
			continue // no limit here: try the next
		}
		if total.Bytes > 0 && total.Bytes < n {
			return total // a cgroup limit above the machine's memory
		}
		return Size{n, file}
	}
	return total
}

// cgroupFiles lists the limit files to try, the process's own cgroup
// (from /proc/self/cgroup) before the mounted root, v2 before v1.
func cgroupFiles(read func(string) ([]byte, error)) []string {
	var v2, v1 string
	if b, err := read("/proc/self/cgroup"); err == nil {
		v2, v1 = ParseSelfCgroup(b)
	}
	var fs []string
	if v2 != "" && v2 != "/" {
		fs = append(fs, path.Join("/sys/fs/cgroup", v2, "memory.max"))
	}
	fs = append(fs, "/sys/fs/cgroup/memory.max")
	if v1 != "" && v1 != "/" {
		fs = append(fs, path.Join("/sys/fs/cgroup/memory", v1, "memory.limit_in_bytes"))
	}
	return append(fs, "/sys/fs/cgroup/memory/memory.limit_in_bytes")
}

// ParseSelfCgroup returns the cgroup v2 path ("0::PATH") and the v1 memory
// controller's path ("N:...memory...:PATH") of /proc/self/cgroup.
func ParseSelfCgroup(b []byte) (v2, v1 string) {
	for line := range strings.Lines(string(b)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
			continue
		}
		for c := range strings.SplitSeq(parts[1], ",") {
			if c == "memory" {
				v1 = parts[2]
			}
		}
	}
	return v2, v1
}

// ParseCgroupLimit reads a memory cgroup's limit file, of either version:
// v2's memory.max (a number of bytes, or "max" for none) or v1's
// memory.limit_in_bytes (a number of bytes, with values near 2^63 meaning
// none). It reports false when the file sets no limit.
func ParseCgroupLimit(b []byte) (int64, bool) {
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 || n >= plausible || n > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}

// ParseMemTotal reads MemTotal of /proc/meminfo, in bytes.
func ParseMemTotal(b []byte) (int64, bool) {
	for line := range strings.Lines(string(b)) {
		kb, ok := strings.CutPrefix(line, "MemTotal:")
		if !ok {
			continue
		}
		kb = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB"))
		n, err := strconv.ParseInt(kb, 10, 64)
		if err != nil || n <= 0 || n >= plausible>>10 {
			return 0, false
		}
		return n << 10, true
	}
	return 0, false
}
