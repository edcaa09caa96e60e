//go:build linux

package clustertest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/tcpopt"
)

// listenIn listens on TCP in h and answers each line with itself; it
// returns the address and a channel of the connections it accepted.
func listenIn(t *testing.T, h *Host) (string, chan net.Conn) {
	t.Helper()
	var ln net.Listener
	var err error
	if derr := h.Do(func() { ln, err = net.Listen("tcp", h.Addr+":0") }); derr != nil || err != nil {
		t.Fatal(derr, err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
			go func() {
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	return ln.Addr().String(), accepted
}

// dialFrom dials address from h, with TCP_USER_TIMEOUT userTimeout.
func dialFrom(t *testing.T, h *Host, address string, userTimeout time.Duration) (net.Conn, *bufio.Reader) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := h.DialContext(ctx, "tcp", address)
	if err != nil {
		t.Fatalf("dialing %s from %s: %v", address, h.Addr, err)
	}
	t.Cleanup(func() { c.Close() })
	if err := tcpopt.SetUserTimeout(c.(*net.TCPConn), userTimeout); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

func echoLine(c net.Conn, r *bufio.Reader, line string, limit time.Duration) error {
	c.SetDeadline(time.Now().Add(limit))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return err
	}
	got, err := r.ReadString('\n')
	if err == nil && got != line+"\n" {
		err = fmt.Errorf("echoed %q, want %q", got, line)
	}
	return err
}

// TestNetPartition: hosts of a Net reach each other by their addresses;
// a partition drops a pair's packets both ways without a word (the
// sender's connection dies by its TCP_USER_TIMEOUT, the receiver's sees
// neither FIN nor RST, the switch counts the drops) while other pairs
// still talk; healed, the pair connects again. A one-way drop loses only
// that way's datagrams.
func TestNetPartition(t *testing.T) {
	n := NewNet(t, 3)
	a, b, c := n.Host(0), n.Host(1), n.Host(2)
	bAddr, bAccepted := listenIn(t, b)
	cAddr, _ := listenIn(t, c)
	ab, abr := dialFrom(t, a, bAddr, 800*time.Millisecond)
	if err := echoLine(ab, abr, "before", 2*time.Second); err != nil {
		t.Fatalf("a to b before the partition: %v", err)
	}
	if ab.LocalAddr().(*net.TCPAddr).IP.String() != a.Addr {
		t.Fatalf("a's connection comes from %v, want %s", ab.LocalAddr(), a.Addr)
	}
	ba := <-bAccepted

	n.Partition(a, b)
	cut := time.Now()
	err := echoLine(ab, abr, "during", 10*time.Second)
	took := time.Since(cut)
	if !errors.Is(err, syscall.ETIMEDOUT) {
		t.Fatalf("a's write across the partition: %v after %v, want ETIMEDOUT (TCP_USER_TIMEOUT 800ms)", err, took)
	}
	t.Logf("a's connection to b timed out %v after the partition", took)
	if took < 700*time.Millisecond {
		t.Errorf("timed out after %v, before TCP_USER_TIMEOUT: something answered", took)
	}
	// b heard nothing: no FIN, no RST.
	ba.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := ba.Read(make([]byte, 16)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("b's side of the partitioned connection: %v, want nothing until its deadline", err)
	}
	if d, err := n.Dropped(a, b); err != nil || d == 0 {
		t.Fatalf("the switch dropped %d packets from a to b, %v; want some", d, err)
	}
	ac, acr := dialFrom(t, a, cAddr, time.Second)
	if err := echoLine(ac, acr, "around", 2*time.Second); err != nil {
		t.Fatalf("a to c during a's partition from b: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	var ne net.Error
	if conn, err := b.DialContext(ctx, "tcp", net.JoinHostPort(a.Addr, "1")); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("b dialing a across the partition: %v, want a timeout (no RST for a closed port)", err)
		if conn != nil {
			conn.Close()
		}
	}
	cancel()

	n.Heal(a, b)
	ab2, abr2 := dialFrom(t, a, bAddr, time.Second)
	if err := echoLine(ab2, abr2, "after", 2*time.Second); err != nil {
		t.Fatalf("a to b after healing: %v", err)
	}

	// One way: a's datagrams to b are lost, b's to a arrive.
	n.Drop(a, b)
	udp := func(h *Host) *net.UDPConn {
		var pc net.PacketConn
		var err error
		if derr := h.Do(func() { pc, err = net.ListenPacket("udp", h.Addr+":0") }); derr != nil || err != nil {
			t.Fatal(derr, err)
		}
		t.Cleanup(func() { pc.Close() })
		return pc.(*net.UDPConn)
	}
	ua, ub := udp(a), udp(b)
	arrives := func(from, to *net.UDPConn) bool {
		if _, err := from.WriteTo([]byte("x"), to.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		to.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, _, err := to.ReadFrom(make([]byte, 4))
		return err == nil
	}
	if arrives(ua, ub) {
		t.Error("a datagram from a reached b through a drop of a to b")
	}
	if !arrives(ub, ua) {
		t.Error("a datagram from b did not reach a with only a to b dropped")
	}
}

// TestNetCommand: a command started with Host.Command runs in the host's
// namespace under the PID its starter sees (ip execs, it does not fork),
// so a signal to that PID reaches the program.
func TestNetCommand(t *testing.T) {
	n := NewNet(t, 1)
	h := n.Host(0)
	argv := h.Command("sh", "-c", `echo $$; exec sleep 30`)
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	pidLine, _ := r.ReadString('\n')
	nsLine, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(pidLine)); err != nil || pid != cmd.Process.Pid {
		t.Errorf("the command's PID is %q, its starter's %d", pidLine, cmd.Process.Pid)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join("/run/netns", h.Name), &st); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("net:[%d]", st.Ino); strings.TrimSpace(nsLine) != want {
		t.Errorf("the command runs in %q, want %s (%s)", strings.TrimSpace(nsLine), want, h.Name)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err == nil || cmd.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("the command ended with %v, want killed by the SIGTERM sent to its PID", err)
	}
}

// TestNetSweepsStale: NewNet removes the namespaces, and kills the
// processes in them, of a Net whose test binary is gone, also when a
// later process has its PID.
func TestNetSweepsStale(t *testing.T) {
	NeedNetns(t)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	// A test binary that is gone, and one whose PID is this one's but
	// which started at another time.
	stale := fmt.Sprintf("%s%d-123-1-h0", netnsPrefix, gone.Process.Pid)
	reused := fmt.Sprintf("%s%d-123-1-h0", netnsPrefix, os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", reused).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", reused, err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", reused).Run() })
	if out, err := exec.Command("ip", "netns", "add", stale).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", stale, err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", stale).Run() })
	left := exec.Command("ip", "netns", "exec", stale, "sleep", "60")
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- left.Wait() }()
	NewNet(t, 1)
	for _, name := range []string{stale, reused} {
		if _, err := os.Stat(filepath.Join("/run/netns", name)); !os.IsNotExist(err) {
			t.Errorf("the stale namespace %s is still there (%v)", name, err)
		}
	}
	if owner(os.Getpid()) == fmt.Sprintf("%d-123", os.Getpid()) {
		t.Fatal("this process started 123 ticks after boot: the test cannot tell it from its stale namespace")
	}
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		left.Process.Kill()
		t.Error("the process left in the stale namespace was not killed")
	}
}

// recorder is a testing.TB whose Fatal and Skip record their message and
// end the call (as the real ones end the test's goroutine).
type recorder struct {
	testing.TB
	fatal, skip string
}

type stop struct{}

func (r *recorder) Helper()           {}
func (r *recorder) Fatal(args ...any) { r.fatal = fmt.Sprint(args...); panic(stop{}) }
func (r *recorder) Skip(args ...any)  { r.skip = fmt.Sprint(args...); panic(stop{}) }

func needNetns(t *testing.T) *recorder {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if v := recover(); v != nil && v != (stop{}) {
				panic(v)
			}
		}()
		NeedNetns(r)
	}()
	return r
}

// TestNeedNetnsNamesWhatIsMissing: without ip and nft on PATH, the
// kernel-partition tests skip naming the Debian packages to install, and
// under CI they fail saying the same.
func TestNeedNetnsNamesWhatIsMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CI", "")
	r := needNetns(t)
	if r.fatal != "" || !strings.Contains(r.skip, "apt-get install iproute2") || !strings.Contains(r.skip, "apt-get install nftables") {
		t.Errorf("outside CI: skip %q, fatal %q; want a skip naming iproute2 and nftables", r.skip, r.fatal)
	}
	for _, ci := range []string{"true", "1"} {
		t.Setenv("CI", ci)
		r = needNetns(t)
		if r.skip != "" || !strings.HasPrefix(r.fatal, "CI: ") || !strings.Contains(r.fatal, "nftables") {
			t.Errorf("CI=%s: skip %q, fatal %q; want a failure naming nftables", ci, r.skip, r.fatal)
		}
	}
	t.Setenv("CI", "false")
	if r = needNetns(t); r.fatal != "" || r.skip == "" {
		t.Errorf("CI=false: skip %q, fatal %q; want a skip", r.skip, r.fatal)
	}
}
