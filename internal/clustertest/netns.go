//go:build linux

package clustertest

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A Net is a few hosts, each a network namespace of its own with one IPv4
// address, joined by a switch: a namespace holding a bridge, with one veth
// pair per host (its eth0 in the host, its other end a port of the bridge).
// Nothing of it lives in the root namespace, so Nets of parallel tests or
// of several test binaries never share an interface, an address or a
// route: each has its own subnet on its own wire. A partition is an
// nftables rule in the switch's bridge family that drops the IP packets
// of one host to another: silently, as a cut cable or a dead router would
// (no RST, no ICMP; the sender's kernel retransmits until its
// TCP_USER_TIMEOUT or keepalive gives up). ARP still passes.
type Net struct {
	t      testing.TB
	prefix string // of every namespace's name: netnsPrefix, owner(), a counter
	sw     string // the switch's namespace
	hosts  []*Host

	mu    sync.Mutex
	drops map[[2]int]bool // directed pairs of host indexes whose packets are dropped
}

// A Host is one network namespace of a Net.
type Host struct {
	// Name is the namespace's name (ip netns list).
	Name string
	// Addr is its IPv4 address, on its eth0.
	Addr  string
	index int
}

// netnsPrefix begins the name of every namespace a Net creates; then come
// the creating process's PID and start time (owner), by which NewNet finds
// the namespaces of test binaries that were killed before their cleanup
// ran, even when a new process has their PID.
const netnsPrefix = "weirct-"

// owner is "PID-START" of the process pid: its PID and its start time in
// clock ticks since boot (/proc/PID/stat), which together name one process
// for the machine's uptime; "" if there is no such process.
func owner(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing parenthesis, where the state is field 3.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 20 {
		return ""
	}
	return fmt.Sprintf("%d-%s", pid, f[19]) // field 22, starttime
}

// Subnet is every Net's subnet: hosts are Subnet.1, Subnet.2... Each Net
// is a wire of its own, out of reach of the root namespace and of other
// Nets, so they all use the same one.
const Subnet = "10.36.0"

var netCount atomic.Int64

// ci reports whether the tests run under CI (CI set, not false or 0),
// where what a test needs must be there.
func ci() bool {
	v := os.Getenv("CI")
	return v != "" && v != "false" && v != "0"
}

// NeedNetns skips t, or fails it under CI (CI set, not false or 0), unless
// this process can build a Net: it runs as root, with `ip` (Debian's
// iproute2) and `nft` (Debian's nftables) on PATH.
func NeedNetns(t testing.TB) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (network namespaces and nftables need CAP_NET_ADMIN and CAP_SYS_ADMIN; CI runs as root)")
	}
	for _, tool := range [][2]string{{"ip", "iproute2"}, {"nft", "nftables"}} {
		if _, err := exec.LookPath(tool[0]); err != nil {
			missing = append(missing, fmt.Sprintf("%s on PATH (apt-get install %s; scripts/test installs it under CI)", tool[0], tool[1]))
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "kernel partitions between namespaces need " + strings.Join(missing, ", ")
	if ci() {
		t.Fatal("CI: " + msg)
	}
	t.Skip(msg)
}

// NewNet builds a Net of n hosts (at most 250) and removes it when t ends,
// reporting, then killing, any process still running in one of its
// hosts. It first removes the namespaces of killed earlier runs. It calls
// NeedNetns.
func NewNet(t testing.TB, n int) *Net {
	t.Helper()
	NeedNetns(t)
	if n < 1 || n > 250 {
		t.Fatalf("clustertest: a Net of %d hosts, want 1 to 250", n)
	}
	sweepStale(t)
	nw := &Net{t: t, prefix: fmt.Sprintf("%s%s-%d-", netnsPrefix, owner(os.Getpid()), netCount.Add(1)), drops: map[[2]int]bool{}}
	nw.sw = nw.prefix + "sw"
	t.Cleanup(nw.remove)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("clustertest: ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", nw.sw)
	run("-n", nw.sw, "link", "add", "br0", "type", "bridge")
	run("-n", nw.sw, "link", "set", "br0", "up")
	for i := range n {
		h := &Host{Name: fmt.Sprintf("%sh%d", nw.prefix, i), Addr: fmt.Sprintf("%s.%d", Subnet, i+1), index: i}
		nw.hosts = append(nw.hosts, h)
		port := fmt.Sprintf("p%d", i)
		run("netns", "add", h.Name)
		run("-n", nw.sw, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", h.Name)
		run("-n", nw.sw, "link", "set", port, "master", "br0", "up")
		run("-n", h.Name, "addr", "add", h.Addr+"/24", "dev", "eth0")
		run("-n", h.Name, "link", "set", "eth0", "up")
		run("-n", h.Name, "link", "set", "lo", "up")
	}
	if err := nw.apply(); err != nil {
		t.Fatal(err)
	}
	return nw
}

// Host returns host i (0-based).
func (n *Net) Host(i int) *Host { return n.hosts[i] }

// Hosts returns every host, in order.
func (n *Net) Hosts() []*Host { return slices.Clone(n.hosts) }

// Partition drops every IP packet between a and b, both ways, until Heal.
// Call it from the test's goroutine (it fails the test if nft does).
func (n *Net) Partition(a, b *Host) {
	n.t.Helper()
	n.set(true, [2]int{a.index, b.index}, [2]int{b.index, a.index})
}

// Drop drops the IP packets from one host to another, only that way,
// until Heal. Call it from the test's goroutine.
func (n *Net) Drop(from, to *Host) {
	n.t.Helper()
	n.set(true, [2]int{from.index, to.index})
}

// Heal lets a's and b's packets pass again, both ways. Call it from the
// test's goroutine.
func (n *Net) Heal(a, b *Host) {
	n.t.Helper()
	n.set(false, [2]int{a.index, b.index}, [2]int{b.index, a.index})
}

func (n *Net) set(drop bool, pairs ...[2]int) {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range pairs {
		if drop {
			n.drops[p] = true
		} else {
			delete(n.drops, p)
		}
	}
	if err := n.apply(); err != nil {
		n.t.Fatal(err)
	}
}

// apply replaces the switch's nftables table with one drop rule per
// dropped pair, in one transaction.
func (n *Net) apply() error {
	pairs := make([][2]int, 0, len(n.drops))
	for p := range n.drops {
		pairs = append(pairs, p)
	}
	slices.SortFunc(pairs, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	var b strings.Builder
	// Declaring the table first makes the delete valid when it is new.
	b.WriteString("table bridge weir\ndelete table bridge weir\ntable bridge weir {\n\tchain forward {\n\t\ttype filter hook forward priority 0; policy accept;\n")
	for _, p := range pairs {
		fmt.Fprintf(&b, "\t\tip saddr %s ip daddr %s counter drop\n", n.hosts[p[0]].Addr, n.hosts[p[1]].Addr)
	}
	b.WriteString("\t}\n}\n")
	cmd := exec.Command("ip", "netns", "exec", n.sw, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("clustertest: nft -f - in %s: %v: %s\nruleset:\n%s", n.sw, err, out, b.String())
	}
	return nil
}

var dropCounter = regexp.MustCompile(`ip saddr (\S+) ip daddr (\S+) counter packets (\d+)`)

// Dropped returns how many packets from one host to another the switch
// has dropped since the last Partition, Drop or Heal.
func (n *Net) Dropped(from, to *Host) (uint64, error) {
	out, err := exec.Command("ip", "netns", "exec", n.sw, "nft", "list", "table", "bridge", "weir").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("clustertest: nft list table bridge weir in %s: %v: %s", n.sw, err, out)
	}
	for _, m := range dropCounter.FindAllStringSubmatch(string(out), -1) {
		if m[1] == from.Addr && m[2] == to.Addr {
			return strconv.ParseUint(m[3], 10, 64)
		}
	}
	return 0, nil
}

// Command returns the argument list that runs name with args inside h:
// `ip netns exec NAME name args...`. ip execs the program in its own
// process (for one namespace it does not fork), so the PID of the
// started command is the program's, and signals sent to it reach the
// program itself.
func (h *Host) Command(name string, args ...string) []string {
	return append([]string{"ip", "netns", "exec", h.Name, name}, args...)
}

// Do runs f on an OS thread that has entered h's namespace: the sockets f
// creates (net.Listen, net.Dial) belong to h, and may be used from any
// goroutine afterwards. The thread returns to its own namespace after f;
// if it cannot, it stays locked and ends with f's goroutine.
func (h *Host) Do(f func()) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("clustertest: this thread's network namespace: %w", err)
			return
		}
		defer self.Close()
		ns, err := os.Open(filepath.Join("/run/netns", h.Name))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("clustertest: host %s: %w", h.Name, err)
			return
		}
		err = unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET)
		ns.Close()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("clustertest: entering the network namespace %s: %w", h.Name, err)
			return
		}
		f()
		// Back home before the thread runs other goroutines. Left locked,
		// the thread would end with this goroutine, unless it is the main
		// thread, which Go keeps (and with it the process would count as
		// one of h's).
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- nil
	}()
	return <-errc
}

// DialContext dials from inside h (a DialContext for an http.Transport or
// a net.Dialer's user).
func (h *Host) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var c net.Conn
	var derr error
	if err := h.Do(func() {
		var d net.Dialer
		c, derr = d.DialContext(ctx, network, address)
	}); err != nil {
		return nil, err
	}
	return c, derr
}

// remove deletes the Net's namespaces (the veth pairs and the bridge go
// with them), after reporting and killing any process left in a host.
func (n *Net) remove() {
	n.t.Helper()
	for _, h := range n.hosts {
		if pids := nsPIDs(h.Name); len(pids) > 0 {
			n.t.Errorf("clustertest: processes left behind in host %s (%s): %v; killing them", h.Name, h.Addr, pids)
			killAll(pids)
		}
	}
	for _, name := range append([]string{n.sw}, hostNames(n.hosts)...) {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			n.t.Errorf("clustertest: ip netns del %s: %v: %s", name, err, out)
		}
	}
}

func hostNames(hosts []*Host) []string {
	names := make([]string, len(hosts))
	for i, h := range hosts {
		names[i] = h.Name
	}
	return names
}

// nsPIDs returns the processes in the named namespace, other than this
// one (whose main thread may be in it while Do runs).
func nsPIDs(name string) []int {
	out, err := exec.Command("ip", "netns", "pids", name).Output()
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

func killAll(pids []int) {
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// sweepStale removes the namespaces of Nets whose test binary is gone
// (killed before its cleanup ran), and kills what still runs in them.
func sweepStale(t testing.TB) {
	t.Helper()
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return // none yet
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), netnsPrefix)
		if !ok {
			continue
		}
		f := strings.SplitN(rest, "-", 3)
		if len(f) < 3 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil || owner(pid) == f[0]+"-"+f[1] {
			continue // its test binary still runs (this one included)
		}
		if pids := nsPIDs(e.Name()); len(pids) > 0 {
			t.Logf("clustertest: killing %v, left in the namespace %s of a test binary that is gone", pids, e.Name())
			killAll(pids)
		}
		if out, err := exec.Command("ip", "netns", "del", e.Name()).CombinedOutput(); err != nil {
			t.Logf("clustertest: removing the stale namespace %s: %v: %s", e.Name(), err, out)
		}
	}
}
