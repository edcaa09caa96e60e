package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/clustertest"
	"github.com/weirhq/weir/internal/etcdtest"
	"github.com/weirhq/weir/internal/kubetest"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/testseed"
)

// High availability across processes (docs/high-availability.md): two
// JobManager processes contend through a real etcd (embedded in this test
// process), TaskManagers know both, and the job's committed output stays
// exactly once whatever happens to the leader.

// haLease is the leader election of these tests: takeover within twice
// the lease duration.
const haLease = 2 * time.Second

// haTimings are the lease and heartbeat settings of every HA test.
func haTimings(cluster string) []string {
	return []string{"-D", "high-availability.cluster-id=" + cluster, "-D", "high-availability.leader-election.lease-duration=" + haLease.String(),
		"-D", "high-availability.leader-election.renew-deadline=1500ms", "-D", "high-availability.leader-election.retry-period=250ms",
		"-D", "heartbeat.interval=200ms", "-D", "heartbeat.timeout=1s"}
}

// haJobManager is a contending JobManager process and its addresses.
type haJobManager struct {
	p         *proc
	rpc, rest string
}

func startHAJobManager(t *testing.T, flags []string) *haJobManager {
	t.Helper()
	jm := &haJobManager{rpc: freeAddr(t), rest: freeAddr(t)}
	jm.p = startWeir(t, "", append([]string{"jobmanager", "--rpc-address", jm.rpc, "--rest-address", jm.rest}, flags...)...)
	waitStderr(t, jm.p, "JobManager is a standby", 20*time.Second)
	return jm
}

// waitJobEnd polls the REST API of whichever JobManager answers until job
// id reaches a terminal state, and returns it.
func waitJobEnd(t *testing.T, limit time.Duration, jms ...*haJobManager) protocol.JobState {
	t.Helper()
	deadline := time.Now().Add(limit)
	// A run canceled to rescale (reactive mode) shows CANCELED until the
	// next run of the job is submitted: only FINISHED, or another end that
	// lasts, is the job's.
	var other protocol.JobState
	var since time.Time
	for time.Now().Before(deadline) {
		for _, jm := range jms {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			jobs, err := rest.NewClient(jm.rest, nil).JobsOverview(ctx)
			cancel()
			if err != nil || len(jobs) != 1 {
				continue
			}
			switch s := protocol.JobState(jobs[0].State); {
			case s == protocol.JobFinished:
				return s
			case !s.Terminal():
				other = ""
			case s != other:
				other, since = s, time.Now()
			case time.Since(since) > 3*time.Second:
				return s
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	var b strings.Builder
	for _, jm := range jms {
		fmt.Fprintf(&b, "\n%v:\n%s", jm.p.cmd.Args[1:], jm.p.stderr.String())
	}
	t.Fatalf("the job did not end within %v%s", limit, b.String())
	return ""
}

// TestHALeaderKilled, with each driver: SIGKILL of the leader JobManager
// while keyed-count runs: the standby leads within twice the lease
// duration, recovers the job from the HA store under its id and resumes it
// from its latest recorded checkpoint on the same TaskManagers, which
// follow the new leader; the committed output is exactly once, and the
// attached client, following the job to the new leader, exits 0. weir list at
// a standby is answered by the leader. Then a JobManager restarted in the
// killed one's place, leading after the other resigns, does not run the
// finished job again.
func TestHALeaderKilled(t *testing.T) {
	forEachDriverWith(t, 37, true, func(t *testing.T, c *haCluster) {
		a, b := c.a, c.b
		if err := a.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		took := waitStderr(t, b.p, "JobManager leads", 4*haLease+5*time.Second)
		t.Logf("the standby leads %v after SIGKILL of the leader (lease %v)", took, haLease)
		// Slack: the race detector, and Kubernetes' whole-second leases
		// judged by the API server's clock.
		if took > 2*haLease+time.Second {
			t.Errorf("the standby took %v to lead, more than twice the lease (%v)", took, haLease)
		}
		waitStderr(t, b.p, "recovering a job of the HA store", 10*time.Second)
		c.exactlyOnce(t)
		t.Logf("the job finished on the new leader %v after the kill", time.Since(killed))
		if !strings.Contains(b.p.stderr.String(), "a client re-attached") || !strings.Contains(c.client.stderr.String(), "following the job at the next leader") {
			t.Errorf("the attached client did not follow the job to the new leader; its stderr:\n%s", c.client.stderr.String())
		}

		// A JobManager in the killed one's place, then the leader resigns:
		// the finished job is not run again.
		c.a = startHAJobManager(t, c.flags)
		// The CLI asked at the standby is answered by the leader (the
		// standby's REST API names it).
		list := startWeir(t, "", "list", "--address", c.a.rest)
		if code, _, _ := list.wait(t, 30*time.Second); code != ExitOK || !strings.Contains(list.stdout.String(), "FINISHED") {
			t.Errorf("weir list at the standby exited %d; stdout:\n%s\nstderr:\n%s", code, list.stdout.String(), list.stderr.String())
		}
		b.p.cmd.Process.Signal(syscall.SIGTERM)
		if code, _, _ := b.p.wait(t, 30*time.Second); code != ExitOK && code != ExitCanceled {
			t.Errorf("the leader exited %d on SIGTERM; stderr:\n%s", code, b.p.stderr.String())
		}
		waitStderr(t, c.a.p, "JobManager leads", 2*haLease+5*time.Second)
		time.Sleep(time.Second)
		if strings.Contains(c.a.p.stderr.String(), "recovering a job") {
			t.Errorf("the new leader ran the finished job again:\n%s", c.a.p.stderr.String())
		}
	})
}

func equalLines(a, b []string) bool { return firstDiff(a, b) == len(a) && len(a) == len(b) }

// haCluster is two contending JobManagers (a leads), two TaskManagers
// that know both, and keyed-count submitted to them, with a completed
// checkpoint.
type haCluster struct {
	driver haDriver
	// attached runs the job with an attached client (client), which
	// follows it from leader to leader; else it is submitted detached.
	attached bool
	client   *proc
	a, b     *haJobManager
	flags    []string // the JobManagers'
	output   string
	want     []string
}

// haDriver is a real HA service for the tests of one driver.
type haDriver struct {
	name string
	// flags are a JobManager's settings for the service.
	flags []string
	// outage makes the service unreachable, and returns what ends it.
	outage func() (restore func())
}

// etcdDriver is an etcd embedded in the test process.
func etcdDriver(t *testing.T) haDriver {
	etcd := etcdtest.Start(t)
	return haDriver{name: "etcd",
		flags:  []string{"-D", "high-availability.type=etcd", "-D", "high-availability.etcd.endpoints=" + strings.Join(etcd.Endpoints(), ",")},
		outage: func() func() { etcd.Stop(); return etcd.Restart }}
}

// kubeDriver is a real kube-apiserver (internal/kubetest), reached through
// a proxy that can go silent, with deploy/kubernetes' ServiceAccount and
// RBAC in a namespace of its own.
func kubeDriver(t *testing.T, seed uint64) haDriver {
	srv := kubetest.Start(t)
	ns := srv.Namespace(t, "ha")
	out, err := exec.Command("kubectl", "--kubeconfig", srv.Kubeconfig, "apply", "-n", ns, "-f", filepath.Join("..", "..", "deploy", "kubernetes", "rbac.yaml")).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply deploy/kubernetes/rbac.yaml: %v\n%s", err, out)
	}
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte(srv.ServiceAccountToken(t, ns, "weir")), 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := clustertest.NewProxy(u.Host, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	return haDriver{name: "kubernetes",
		flags: []string{"-D", "high-availability.type=kubernetes", "-D", "kubernetes.namespace=" + ns,
			"-D", "high-availability.kubernetes.api-server=https://" + proxy.Addr(), "-D", "high-availability.kubernetes.token-file=" + token,
			"-D", "high-availability.kubernetes.ca-file=" + srv.CAFile},
		outage: func() func() { proxy.Silence(); return proxy.Heal }}
}

// withEachDriver runs f with each driver, as subtests named after it;
// flags are a JobManager's settings of the driver and the test's timings.
func withEachDriver(t *testing.T, seed uint64, f func(t *testing.T, r *rand.Rand, d haDriver, flags []string)) {
	if testing.Short() {
		t.Skip("processes and an HA service: the full pass runs it")
	}
	// These tests mostly wait (for leases, heartbeats, a rate-limited
	// input): they run beside each other, after the package's others.
	t.Parallel()
	for _, name := range []string{"etcd", "kubernetes"} {
		t.Run(name, func(t *testing.T) {
			r := testseed.Rand(t, seed)
			var d haDriver
			if name == "etcd" {
				d = etcdDriver(t)
			} else {
				d = kubeDriver(t, r.Uint64())
			}
			f(t, r, d, append(haTimings(fmt.Sprintf("t%d", r.Uint32())), d.flags...))
		})
	}
}

// forEachDriver runs f on a started haCluster of each driver.
func forEachDriver(t *testing.T, seed uint64, f func(t *testing.T, c *haCluster)) {
	forEachDriverWith(t, seed, false, f)
}

// forEachDriverWith is forEachDriver with the job's client attached or not.
func forEachDriverWith(t *testing.T, seed uint64, attached bool, f func(t *testing.T, c *haCluster)) {
	withEachDriver(t, seed, func(t *testing.T, r *rand.Rand, d haDriver, flags []string) {
		c := &haCluster{driver: d, attached: attached}
		f(t, c.start(t, r, flags))
	})
}

// start starts the cluster's processes with the JobManagers' flags.
func (c *haCluster) start(t *testing.T, r *rand.Rand, flags []string) *haCluster {
	t.Helper()
	dir := t.TempDir()
	input := filepath.Join(dir, "in.tsv")
	c.output = filepath.Join(dir, "out")
	c.want = writeKeyedInput(t, input, r, 6000, 40)
	// The JobManagers' --checkpoint-dir is the job's (it is submitted
	// without one), as deploy/kubernetes does it.
	flags = append(flags, "--checkpoint-dir", filepath.Join(dir, "cp"))
	c.flags = flags
	c.a = startHAJobManager(t, flags)
	waitStderr(t, c.a.p, "JobManager leads", 20*time.Second)
	c.b = startHAJobManager(t, flags)
	jms := c.a.rpc + "," + c.b.rpc
	hb := []string{"-D", "heartbeat.interval=200ms", "-D", "heartbeat.timeout=1s"}
	startTaskManager(t, os.Args[0], jms, "tm-a", 2, hb...)
	startTaskManager(t, os.Args[0], jms, "tm-b", 2, hb...)
	run := []string{"run", "keyed-count", "--jobmanager", jms, "--input", input, "--output", c.output,
		"--parallelism", "2", "--checkpoint-interval", "100ms", "--rate", "2000"}
	if c.attached {
		c.client = startWeir(t, "", run...)
	} else {
		client := startWeir(t, "", append(run, "--detached")...)
		if code, _, _ := client.wait(t, 30*time.Second); code != ExitOK {
			t.Fatalf("the detached client exited %d; stderr:\n%s\nleader:\n%s", code, client.stderr.String(), c.a.p.stderr.String())
		}
	}
	waitStderr(t, c.a.p, "checkpoint completed", 20*time.Second)
	time.Sleep(time.Duration(200+r.IntN(1000)) * time.Millisecond)
	return c
}

// exactlyOnce waits for the job's end on either JobManager and checks the
// committed output.
func (c *haCluster) exactlyOnce(t *testing.T) {
	t.Helper()
	if st := waitJobEnd(t, 90*time.Second, c.a, c.b); st != protocol.JobFinished {
		t.Fatalf("the job ended %s; a:\n%s\nb:\n%s", st, c.a.p.stderr.String(), c.b.p.stderr.String())
	}
	if got := committedLines(t, c.output); !equalLines(got, c.want) {
		t.Fatalf("committed %d lines, want %d exactly once (first difference at %d); a:\n%s\nb:\n%s",
			len(got), len(c.want), firstDiff(got, c.want), c.a.p.stderr.String(), c.b.p.stderr.String())
	}
	if c.client != nil {
		if code, _, _ := c.client.wait(t, 30*time.Second); code != ExitOK {
			t.Fatalf("the attached client exited %d; stdout:\n%s\nstderr:\n%s", code, c.client.stdout.String(), c.client.stderr.String())
		}
	}
}

// TestHALeaderPaused, with each driver: the leader is frozen (SIGSTOP)
// until the standby leads, then thawed: the zombie finds its term over,
// steps down without recording anything (its store writes are refused),
// and the job, resumed by the new leader, commits exactly once; the
// attached client, told by the zombie that it stepped down, follows the
// job to the new leader and exits 0.
func TestHALeaderPaused(t *testing.T) {
	forEachDriverWith(t, 38, true, func(t *testing.T, c *haCluster) {
		if err := c.a.p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		took := waitStderr(t, c.b.p, "JobManager leads", 4*haLease+5*time.Second)
		t.Logf("the standby leads %v after the leader froze", took)
		time.Sleep(500 * time.Millisecond)
		c.a.p.cmd.Process.Signal(syscall.SIGCONT)
		waitStderr(t, c.a.p, "JobManager lost its leadership", 10*time.Second)
		waitStderr(t, c.a.p, "JobManager is a standby", 10*time.Second)
		c.exactlyOnce(t)
		if strings.Count(c.a.p.stderr.String(), "JobManager leads") != 1 {
			t.Errorf("the thawed leader led again while the other leads:\n%s", c.a.p.stderr.String())
		}
	})
}

// TestHAStoreUnreachable, with each driver: the HA service becomes
// unreachable while keyed-count runs (etcd stops; the API server's proxy
// goes silent): the leader, unable to renew, steps down within the renew
// deadline and cancels its job without recording it finished; when the
// service is back a JobManager leads again, recovers the job and it
// completes exactly once; the attached client follows it there.
func TestHAStoreUnreachable(t *testing.T) {
	forEachDriverWith(t, 39, true, func(t *testing.T, c *haCluster) {
		// When the outage begins is known only to within the time outage
		// takes: etcd's Stop drains its clients first (seconds under load).
		start := time.Now()
		restore := c.driver.outage()
		begun := time.Since(start)
		waitStderr(t, c.a.p, "JobManager lost its leadership", 10*time.Second)
		stepped := time.Since(start)
		t.Logf("the leader stepped down %v after %s's outage began (which took %v to begin)", stepped, c.driver.name, begun)
		if stepped > begun+1500*time.Millisecond+time.Second {
			t.Errorf("the leader stepped down %v after the outage began (%v to begin), later than the renew deadline (1.5s)", stepped, begun)
		}
		time.Sleep(2 * time.Second)
		restore()
		c.exactlyOnce(t)
		if n := strings.Count(c.a.p.stderr.String()+c.b.p.stderr.String(), "recovering a job of the HA store"); n != 1 {
			t.Errorf("the job was recovered %d times, want once", n)
		}
	})
}

// TestWithCheckpointDir: the JobManager's --checkpoint-dir goes to a
// checkpointing built-in job submitted without one, and nowhere else.
func TestWithCheckpointDir(t *testing.T) {
	for _, c := range []struct {
		program string
		args    []string
		want    string
	}{
		{"keyed-count", []string{"--input=/i"}, "--input=/i --checkpoint-dir=/cp"},
		{"window-agg", nil, "--checkpoint-dir=/cp"},
		{"keyed-count", []string{"--checkpoint-dir=/mine"}, "--checkpoint-dir=/mine"},
		{"kafka-keyed-count", []string{"--guarantee=none"}, "--guarantee=none"},
		{"kafka-keyed-count", []string{"--guarantee", "none"}, "--guarantee none"},
		{"kafka-keyed-count", []string{"--guarantee=exactly-once"}, "--guarantee=exactly-once --checkpoint-dir=/cp"},
		{"wordcount", []string{"--input=/i"}, "--input=/i"},
		{"clicks", nil, ""},
	} {
		if got := strings.Join(withCheckpointDir(c.program, c.args, "/cp"), " "); got != c.want {
			t.Errorf("%s %q: %q, want %q", c.program, c.args, got, c.want)
		}
	}
	if got := withCheckpointDir("keyed-count", []string{"--input=/i"}, ""); len(got) != 1 {
		t.Errorf("without a JobManager default: %q", got)
	}
}
