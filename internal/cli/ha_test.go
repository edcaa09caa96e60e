package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/etcdtest"
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

// haFlags are a JobManager's flags for the etcd at endpoints.
func haFlags(endpoints []string, cluster string) []string {
	return append(haTimings(cluster), "-D", "high-availability.type=etcd", "-D", "high-availability.etcd.endpoints="+strings.Join(endpoints, ","))
}

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

// TestHALeaderKilled: SIGKILL of the leader JobManager while keyed-count
// runs: the standby leads within twice the lease duration, recovers the
// job from the HA store under its id and resumes it from its latest
// recorded checkpoint on the same TaskManagers, which follow the new
// leader; the committed output is exactly once. Then a JobManager
// restarted in the killed one's place, leading after the other resigns,
// does not run the finished job again.
func TestHALeaderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("processes and an etcd: the full pass runs it")
	}
	r := testseed.Rand(t, 37)
	etcd := etcdtest.Start(t)
	dir := t.TempDir()
	input, output := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "out")
	want := writeKeyedInput(t, input, r, 6000, 40)
	flags := haFlags(etcd.Endpoints(), fmt.Sprintf("t%d", r.Uint32()))
	a := startHAJobManager(t, flags)
	waitStderr(t, a.p, "JobManager leads", 20*time.Second)
	b := startHAJobManager(t, flags)
	jms := a.rpc + "," + b.rpc
	hb := []string{"-D", "heartbeat.interval=200ms", "-D", "heartbeat.timeout=1s"}
	startTaskManager(t, os.Args[0], jms, "tm-a", 2, hb...)
	startTaskManager(t, os.Args[0], jms, "tm-b", 2, hb...)
	// Submitted through the standby first: it names the leader, and the
	// client follows.
	client := startWeir(t, "", "run", "keyed-count", "--jobmanager", b.rpc+","+a.rpc, "--detached", "--input", input, "--output", output,
		"--checkpoint-dir", filepath.Join(dir, "cp"), "--parallelism", "2", "--checkpoint-interval", "100ms", "--rate", "2000")
	if code, _, _ := client.wait(t, 30*time.Second); code != ExitOK {
		t.Fatalf("the detached client exited %d; stderr:\n%s\nleader:\n%s", code, client.stderr.String(), a.p.stderr.String())
	}
	waitStderr(t, a.p, "checkpoint completed", 20*time.Second)
	time.Sleep(time.Duration(200+r.IntN(1200)) * time.Millisecond)
	if err := a.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	took := waitStderr(t, b.p, "JobManager leads", 4*haLease+5*time.Second)
	t.Logf("the standby leads %v after SIGKILL of the leader (lease %v)", took, haLease)
	if took > 2*haLease+time.Second { // slack: the embedded etcd and the race detector
		t.Errorf("the standby took %v to lead, more than twice the lease (%v)", took, haLease)
	}
	waitStderr(t, b.p, "recovering a job of the HA store", 10*time.Second)
	if st := waitJobEnd(t, 90*time.Second, b); st != protocol.JobFinished {
		t.Fatalf("the recovered job ended %s; new leader:\n%s", st, b.p.stderr.String())
	}
	t.Logf("the job finished on the new leader %v after the kill", time.Since(killed))
	if got := committedLines(t, output); !equalLines(got, want) {
		t.Fatalf("committed %d lines, want %d exactly once (first difference at %d); new leader:\n%s", len(got), len(want), firstDiff(got, want), b.p.stderr.String())
	}

	// A JobManager in the killed one's place, then the leader resigns: the
	// finished job is not run again.
	a = startHAJobManager(t, flags)
	// The CLI asked at the standby is answered by the leader (the standby's
	// REST API names it).
	list := startWeir(t, "", "list", "--address", a.rest)
	if code, _, _ := list.wait(t, 30*time.Second); code != ExitOK || !strings.Contains(list.stdout.String(), "FINISHED") {
		t.Errorf("weir list at the standby exited %d; stdout:\n%s\nstderr:\n%s", code, list.stdout.String(), list.stderr.String())
	}
	b.p.cmd.Process.Signal(syscall.SIGTERM)
	if code, _, _ := b.p.wait(t, 30*time.Second); code != ExitOK && code != ExitCanceled {
		t.Errorf("the leader exited %d on SIGTERM; stderr:\n%s", code, b.p.stderr.String())
	}
	waitStderr(t, a.p, "JobManager leads", 2*haLease+5*time.Second)
	time.Sleep(time.Second)
	if strings.Contains(a.p.stderr.String(), "recovering a job") {
		t.Errorf("the new leader ran the finished job again:\n%s", a.p.stderr.String())
	}
}

func equalLines(a, b []string) bool { return firstDiff(a, b) == len(a) && len(a) == len(b) }

// haCluster is two contending JobManagers (a leads), two TaskManagers
// that know both, and keyed-count submitted to them, with a completed
// checkpoint.
type haCluster struct {
	etcd   *etcdtest.Server
	a, b   *haJobManager
	output string
	want   []string
}

func startHACluster(t *testing.T, seed uint64) *haCluster {
	t.Helper()
	r := testseed.Rand(t, seed)
	c := &haCluster{etcd: etcdtest.Start(t)}
	return c.start(t, r, haFlags(c.etcd.Endpoints(), fmt.Sprintf("t%d", r.Uint32())))
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
	c.a = startHAJobManager(t, flags)
	waitStderr(t, c.a.p, "JobManager leads", 20*time.Second)
	c.b = startHAJobManager(t, flags)
	jms := c.a.rpc + "," + c.b.rpc
	hb := []string{"-D", "heartbeat.interval=200ms", "-D", "heartbeat.timeout=1s"}
	startTaskManager(t, os.Args[0], jms, "tm-a", 2, hb...)
	startTaskManager(t, os.Args[0], jms, "tm-b", 2, hb...)
	client := startWeir(t, "", "run", "keyed-count", "--jobmanager", jms, "--detached", "--input", input, "--output", c.output,
		"--parallelism", "2", "--checkpoint-interval", "100ms", "--rate", "2000")
	if code, _, _ := client.wait(t, 30*time.Second); code != ExitOK {
		t.Fatalf("the detached client exited %d; stderr:\n%s\nleader:\n%s", code, client.stderr.String(), c.a.p.stderr.String())
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
}

// TestHALeaderPaused: the leader is frozen (SIGSTOP) until the standby
// leads, then thawed: the zombie finds its term over, steps down without
// recording anything (its store writes are refused), and the job, resumed
// by the new leader, commits exactly once.
func TestHALeaderPaused(t *testing.T) {
	if testing.Short() {
		t.Skip("processes and an etcd: the full pass runs it")
	}
	c := startHACluster(t, 38)
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
}

// TestHAStoreUnreachable: etcd stops (a crash) while keyed-count runs: the
// leader, unable to renew, steps down within the renew deadline and
// cancels its job without recording it finished; when etcd returns, a
// JobManager leads again, recovers the job and it completes exactly once.
func TestHAStoreUnreachable(t *testing.T) {
	if testing.Short() {
		t.Skip("processes and an etcd: the full pass runs it")
	}
	c := startHACluster(t, 39)
	c.etcd.Stop()
	stepped := waitStderr(t, c.a.p, "JobManager lost its leadership", 10*time.Second)
	t.Logf("the leader stepped down %v after etcd stopped", stepped)
	if stepped > 1500*time.Millisecond+time.Second {
		t.Errorf("the leader stepped down %v after etcd stopped, later than the renew deadline (1.5s)", stepped)
	}
	time.Sleep(2 * time.Second)
	c.etcd.Restart()
	c.exactlyOnce(t)
	if n := strings.Count(c.a.p.stderr.String()+c.b.p.stderr.String(), "recovering a job of the HA store"); n != 1 {
		t.Errorf("the job was recovered %d times, want once", n)
	}
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
