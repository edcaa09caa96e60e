package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/clustertest"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/testseed"
)

// A JobManager and TaskManagers as processes of this binary
// (docs/distributed-runtime.md, slice 1): each listens on a free port and
// prints its ready line, the test signals each by its own PID, and every
// process it started is gone when it ends (startProgram's cleanup).

var jobManagerReady = regexp.MustCompile(`JobManager ready: rpc (\S+) rest (\S+)`)

// startJobManager starts `weir jobmanager` on free ports and returns it
// with its RPC and REST addresses.
func startJobManager(t *testing.T, flags ...string) (p *proc, rpcAddr, restAddr string) {
	t.Helper()
	p = startWeir(t, "", append([]string{"jobmanager", "--rpc-address", "127.0.0.1:0", "--rest-address", "127.0.0.1:0"}, flags...)...)
	m := waitOutput(t, p, jobManagerReady)
	return p, m[1], m[2]
}

// startTaskManager starts `weir taskmanager` of program (this binary when
// it is os.Args[0]) and waits until it registered.
func startTaskManager(t *testing.T, program, jm, id string, slots int, flags ...string) *proc {
	t.Helper()
	p := startProgram(t, program, "", append([]string{"taskmanager", "--jobmanager", jm, "--id", id, "--slots", fmt.Sprint(slots)}, flags...)...)
	waitOutput(t, p, regexp.MustCompile(`TaskManager registered with`))
	return p
}

// waitOutput waits for re on p's stdout and returns its submatches.
func waitOutput(t *testing.T, p *proc, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(p.stdout.String()); m != nil {
			return m
		}
		if p.cmd.ProcessState != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %q from %v; stdout:\n%s\nstderr:\n%s", re, p.cmd.Args[1:], p.stdout.String(), p.stderr.String())
	return nil
}

// waitStderr waits up to limit for text on p's stderr and returns how
// long it took.
func waitStderr(t *testing.T, p *proc, text string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for !strings.Contains(p.stderr.String(), text) {
		if time.Since(start) > limit {
			t.Fatalf("no %q from %v within %v; stderr:\n%s", text, p.cmd.Args[1:], limit, p.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

// TestClusterKeyedCountSurvivesTaskManagerKill: keyed-count submitted to a
// JobManager process runs in a TaskManager process; SIGKILL of that
// TaskManager at a random moment fails the job over to a spare
// TaskManager process, and the committed output is exactly once (per key,
// counts 1..N once each, right sums). Then SIGTERM ends each process
// with 0.
func TestClusterKeyedCountSurvivesTaskManagerKill(t *testing.T) {
	r := testseed.Rand(t, 36)
	dir := t.TempDir()
	input, output := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "out")
	n := 6000
	want := writeKeyedInput(t, input, r, n, 40)
	jm, rpcAddr, restAddr := startJobManager(t)
	first := startTaskManager(t, os.Args[0], rpcAddr, "tm-a", 2)
	spare := startTaskManager(t, os.Args[0], rpcAddr, "tm-b", 2)
	// The REST API lists both, with their slots and latest heartbeat.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tms, err := rest.NewClient(restAddr, nil).TaskManagers(ctx)
	if err != nil || len(tms) != 2 || tms[0].ID != "tm-a" || tms[1].ID != "tm-b" || tms[0].SlotsNumber != 2 || tms[0].FreeSlots != 2 ||
		tms[0].TimeSinceLastHeartbeat < time.Now().Add(-time.Minute).UnixMilli() {
		t.Fatalf("/taskmanagers: %+v, %v; want tm-a and tm-b with 2 free slots each, heard within a minute", tms, err)
	}

	// The client runs from another directory: the paths it sends are made
	// absolute first.
	client := startWeir(t, "", "run", "keyed-count", "--jobmanager", rpcAddr, "--input", input, "--output", output,
		"--checkpoint-dir", filepath.Join(dir, "cp"), "--parallelism", "2", "--checkpoint-interval", "100ms", "--rate", "2000")
	// The REST API says where the sink's subtasks run: kill the
	// TaskManager of one of them.
	kill := time.Duration(300+r.IntN(1500)) * time.Millisecond
	time.Sleep(kill)
	holder := sinkHolder(t, restAddr, "Committed counts", r)
	victim := map[string]*proc{"tm-a": first, "tm-b": spare}[holder]
	if victim == nil {
		t.Fatalf("the sink runs on %q, not a TaskManager this test started", holder)
	}
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if victim == spare {
		spare = first
	}
	t.Logf("killed %s, which runs a subtask of the sink, %v after submitting", holder, kill)
	wantExactlyOnce(t, client, output, want, jm)
	if !strings.Contains(client.stderr.String(), "submitted to "+rpcAddr) {
		t.Errorf("the client did not say where it submitted; stderr:\n%s", client.stderr.String())
	}
	if !strings.Contains(jm.stderr.String(), "TaskManager "+holder+" lost") {
		t.Errorf("the JobManager did not log %s's loss; stderr:\n%s", holder, jm.stderr.String())
	}
	// The job's exceptions name the TaskManager its failure came from.
	c := rest.NewClient(restAddr, nil)
	if jobs, err := c.JobsOverview(ctx); err != nil || len(jobs) != 1 {
		t.Errorf("/jobs/overview: %+v, %v", jobs, err)
	} else if ex, err := c.Exceptions(ctx, jobs[0].ID); err != nil || len(ex.AllExceptions) == 0 || ex.AllExceptions[0].TaskManagerID != holder {
		t.Errorf("/jobs/%s/exceptions: %+v, %v; want the failure on %s", jobs[0].ID, ex, err, holder)
	}
	stopAll(t, spare, jm)
}

// TestClusterSilentTaskManager: a TaskManager frozen (SIGSTOP: its
// connections stay open and the kernel still acknowledges, so nothing but
// the heartbeats tells) is lost after heartbeat.timeout and its job
// resumes on a spare; thawed, it finds its heartbeats unanswered, cancels
// what it ran and registers again. The output stays exactly once.
func TestClusterSilentTaskManager(t *testing.T) {
	r := testseed.Rand(t, 37)
	dir := t.TempDir()
	input, output := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "out")
	want := writeKeyedInput(t, input, r, 6000, 40)
	hb := []string{"-D", "heartbeat.interval=200ms", "-D", "heartbeat.timeout=1s"}
	jm, rpcAddr, _ := startJobManager(t, hb...)
	frozen := startTaskManager(t, os.Args[0], rpcAddr, "tm-a", 2, hb...)
	startTaskManager(t, os.Args[0], rpcAddr, "tm-b", 2, hb...) // the spare
	client := startWeir(t, "", "run", "keyed-count", "--jobmanager", rpcAddr, "--input", input, "--output", output,
		"--checkpoint-dir", filepath.Join(dir, "cp"), "--parallelism", "2", "--checkpoint-interval", "100ms", "--rate", "2000")
	time.Sleep(time.Duration(300+r.IntN(1200)) * time.Millisecond)
	if err := frozen.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	lost := waitStderr(t, jm, "TaskManager tm-a lost: no heartbeat", 30*time.Second)
	t.Logf("tm-a frozen; lost after %v (heartbeat.timeout 1s)", lost)
	// Silence counts from its last heartbeat, up to one interval before
	// it froze, or a little more when the sender ran late under load; two
	// intervals below the timeout still tells a heartbeat timeout from a
	// closed connection.
	if lost < 600*time.Millisecond {
		t.Errorf("tm-a lost %v after it froze, before heartbeat.timeout less two heartbeat.intervals", lost)
	}
	time.Sleep(500 * time.Millisecond)
	frozen.cmd.Process.Signal(syscall.SIGCONT)
	waitStderr(t, frozen, "TaskManager fenced itself", 30*time.Second)
	wantExactlyOnce(t, client, output, want, jm)
	if strings.Count(frozen.stdout.String(), "TaskManager registered") != 2 {
		t.Errorf("the thawed TaskManager did not register again; stdout:\n%s", frozen.stdout.String())
	}
}

// TestClusterWaitsForANewTaskManager: with its only TaskManager killed,
// the job waits for slots (tasks SCHEDULED) and resumes from its latest
// checkpoint once a new TaskManager process registers; exactly once.
func TestClusterWaitsForANewTaskManager(t *testing.T) {
	r := testseed.Rand(t, 38)
	dir := t.TempDir()
	input, output := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "out")
	want := writeKeyedInput(t, input, r, 4000, 30)
	jm, rpcAddr, restAddr := startJobManager(t)
	only := startTaskManager(t, os.Args[0], rpcAddr, "tm-a", 2)
	client := startWeir(t, "", "run", "keyed-count", "--jobmanager", rpcAddr, "--input", input, "--output", output,
		"--checkpoint-dir", filepath.Join(dir, "cp"), "--parallelism", "2", "--checkpoint-interval", "100ms", "--rate", "2000")
	time.Sleep(time.Duration(300+r.IntN(1000)) * time.Millisecond)
	only.cmd.Process.Signal(syscall.SIGKILL)
	only.wait(t, 10*time.Second)
	// The job waits: nothing can run it until a TaskManager registers.
	c := rest.NewClient(restAddr, nil)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		jobs, err := c.JobsOverview(ctx)
		cancel()
		if err == nil && len(jobs) == 1 && jobs[0].State == "RUNNING" && jobs[0].Tasks.Scheduled == jobs[0].Tasks.Total {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not wait for slots after its TaskManager died: %+v, %v", jobs, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	startTaskManager(t, os.Args[0], rpcAddr, "tm-new", 2)
	wantExactlyOnce(t, client, output, want, jm)
}

// TestClusterDelayedLink: 50-200 ms of delay with jitter on every link
// (each chunk each way): the control links between the JobManager and two
// TaskManagers and the data links between the TaskManagers, which the
// job's keyBy crosses (each TaskManager advertises its proxy's address).
// Neither is a TaskManager lost nor do checkpoints stop completing, and
// the job ends exactly once.
func TestClusterDelayedLink(t *testing.T) {
	r := testseed.Rand(t, 39)
	dir := t.TempDir()
	input, output := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "out")
	want := writeKeyedInput(t, input, r, 4000, 30)
	jm, rpcAddr, _ := startJobManager(t, "--log-level", "info")
	delayed := func(target string) *clustertest.Proxy {
		t.Helper()
		link, err := clustertest.NewProxy(target, r.Uint64())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(link.Close)
		link.SetDelay(50*time.Millisecond, 150*time.Millisecond)
		return link
	}
	// Each TaskManager's control link, and its data port as the other
	// dials it, go through a proxy of their own.
	var dataLinks []*clustertest.Proxy
	for _, id := range []string{"tm-a", "tm-b"} {
		data := freeAddr(t)
		dataLinks = append(dataLinks, delayed(data))
		startTaskManager(t, os.Args[0], delayed(rpcAddr).Addr(), id, 1, "--data-address", data, "--advertised-data-address", dataLinks[len(dataLinks)-1].Addr())
	}
	client := startWeir(t, "", "run", "keyed-count", "--jobmanager", rpcAddr, "--input", input, "--output", output,
		"--checkpoint-dir", filepath.Join(dir, "cp"), "--parallelism", "2", "--checkpoint-interval", "200ms", "--rate", "1000")
	wantExactlyOnce(t, client, output, want, jm)
	log := jm.stderr.String()
	if strings.Contains(log, "lost") || strings.Contains(log, "restarting") {
		t.Fatalf("a delayed link caused a failover; JobManager:\n%s", log)
	}
	if n := strings.Count(log, "checkpoint completed"); n < 5 {
		t.Fatalf("%d checkpoints completed over delayed links, want at least 5; JobManager:\n%s", n, log)
	}
	// One input file is one split, read by one source subtask: its
	// records cross one data link, events (barriers) both.
	if a, b := dataLinks[0].Bytes(), dataLinks[1].Bytes(); max(a, b) < 10_000 || min(a, b) == 0 {
		t.Fatalf("the data links forwarded %d and %d bytes: the keyBy did not cross them", a, b)
	}
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestClusterSilentLink: the control link of the TaskManager running a job
// goes silent (the proxy forwards nothing and closes nothing): the
// JobManager loses it by silence and resumes the job on a spare, the
// TaskManager fences itself, and once the link heals it registers again.
// Exactly once.
func TestClusterSilentLink(t *testing.T) {
	r := testseed.Rand(t, 40)
	dir := t.TempDir()
	input, output := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "out")
	want := writeKeyedInput(t, input, r, 6000, 40)
	hb := []string{"-D", "heartbeat.interval=200ms", "-D", "heartbeat.timeout=1s"}
	jm, rpcAddr, _ := startJobManager(t, hb...)
	link, err := clustertest.NewProxy(rpcAddr, r.Uint64())
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	cut := startTaskManager(t, os.Args[0], link.Addr(), "tm-a", 2, hb...)
	startTaskManager(t, os.Args[0], rpcAddr, "tm-b", 2, hb...) // the spare
	client := startWeir(t, "", "run", "keyed-count", "--jobmanager", rpcAddr, "--input", input, "--output", output,
		"--checkpoint-dir", filepath.Join(dir, "cp"), "--parallelism", "2", "--checkpoint-interval", "100ms", "--rate", "2000")
	time.Sleep(time.Duration(300+r.IntN(1200)) * time.Millisecond)
	link.Silence()
	silenced := time.Now()
	waitStderr(t, cut, "TaskManager fenced itself", 30*time.Second)
	waitStderr(t, jm, "TaskManager tm-a lost", 30*time.Second)
	t.Logf("both sides gave the link up within %v", time.Since(silenced))
	link.Heal()
	wantExactlyOnce(t, client, output, want, jm)
	waitOutput(t, cut, regexp.MustCompile(`(?s)TaskManager registered.*TaskManager registered`))
}

// TestClusterStopAndResume: weir stop takes a savepoint of a job running
// on two TaskManager processes (its keyBy crossing them; with aligned,
// then with unaligned checkpoints: its subtasks write the savepoint, the
// JobManager completes it) and the client exits 0; the job resumed from
// the savepoint at parallelism 3 on the pebble backend, on three other
// TaskManager processes, completes the output exactly once.
func TestClusterStopAndResume(t *testing.T) {
	seed := testseed.New(t)
	for i, mode := range []string{"aligned", "unaligned"} {
		t.Run(mode, func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			dir := t.TempDir()
			in, out, cps, sps := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "out"), filepath.Join(dir, "cps"), filepath.Join(dir, "sps")
			want := writeKeyedInput(t, in, r, 6000, 50)
			jm, rpcAddr, restAddr := startJobManager(t)
			// Two TaskManagers of one slot: the keyBy crosses processes.
			first := []*proc{startTaskManager(t, os.Args[0], rpcAddr, "tm-a", 1), startTaskManager(t, os.Args[0], rpcAddr, "tm-b", 1)}
			args := []string{"run", "keyed-count", "--jobmanager", rpcAddr, "--input", in, "--output", out, "--checkpoint-dir", cps,
				"--checkpoint-interval", "200ms", "--rate", "3000", "--parallelism", "2"}
			if mode == "unaligned" {
				args = append(args, "--unaligned")
			}
			client := startWeir(t, "", args...)
			sinkHolder(t, restAddr, "Committed counts", r) // running
			time.Sleep(time.Duration(200+r.IntN(800)) * time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			jobs, err := rest.NewClient(restAddr, nil).JobsOverview(ctx)
			if err != nil || len(jobs) != 1 {
				t.Fatalf("/jobs/overview: %+v, %v", jobs, err)
			}
			code, stdout, stderr := runWeir(t, 60*time.Second, "stop", jobs[0].ID, "--address", restAddr, "--dir", sps)
			m := stoppedLine.FindStringSubmatch(stdout)
			if code != ExitOK || m == nil {
				t.Fatalf("weir stop: exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			if code, _, _ := client.wait(t, 30*time.Second); code != ExitOK {
				t.Fatalf("the stopped job's client exited %d, want 0 (FINISHED); stderr:\n%s", code, client.stderr.String())
			}
			stopped := len(committedLines(t, out))
			// Three other TaskManagers of one slot resume it; the first two
			// leave.
			stopAll(t, first...)
			for _, id := range []string{"tm-c", "tm-d", "tm-e"} {
				startTaskManager(t, os.Args[0], rpcAddr, id, 1)
			}
			resumed := startWeir(t, "", "run", "keyed-count", "--jobmanager", rpcAddr, "--input", in, "--output", out,
				"--checkpoint-dir", cps, "--from", m[1], "--parallelism", "3", "--state-backend", "pebble")
			wantExactlyOnce(t, resumed, out, want, jm)
			t.Logf("stopped with %d of %d lines committed; savepoint %s", stopped, len(want), m[1])
		})
	}
}

// sinkHolder returns the TaskManager id of a random subtask of the job's
// vertex whose name contains sink, once every subtask of it is placed.
func sinkHolder(t *testing.T, restAddr, sink string, r interface{ IntN(int) int }) string {
	t.Helper()
	c := rest.NewClient(restAddr, nil)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		jobs, err := c.JobsOverview(ctx)
		if err == nil && len(jobs) == 1 {
			if job, err := c.Job(ctx, jobs[0].ID); err == nil {
				for _, v := range job.Vertices {
					if !strings.Contains(v.Name, sink) {
						continue
					}
					d, err := c.VertexDetails(ctx, job.ID, v.ID)
					if err == nil && len(d.Subtasks) > 0 && !slices.ContainsFunc(d.Subtasks, func(s rest.SubtaskDetail) bool { return s.TaskManagerID == "" }) {
						cancel()
						return d.Subtasks[r.IntN(len(d.Subtasks))].TaskManagerID
					}
				}
			}
		}
		cancel()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the REST API never placed every subtask of %q", sink)
	return ""
}

// wantExactlyOnce waits for the client of a keyed-count job to exit 0 and
// checks that the job committed want to output exactly once (per key,
// counts 1..N once each, right sums). On failure it shows the stderr of
// the client and of logs (the cluster's processes).
func wantExactlyOnce(t *testing.T, client *proc, output string, want []string, logs ...*proc) {
	t.Helper()
	if code, took, _ := client.wait(t, 90*time.Second); code != ExitOK {
		var b strings.Builder
		for _, p := range logs {
			fmt.Fprintf(&b, "\n%v:\n%s", p.cmd.Args[1:], p.stderr.String())
		}
		t.Fatalf("the client exited %d after %v; stderr:\n%s%s", code, took, client.stderr.String(), b.String())
	}
	if got := committedLines(t, output); !slices.Equal(got, want) {
		t.Fatalf("committed %d lines, want %d exactly once (first difference at %d)", len(got), len(want), firstDiff(got, want))
	}
}

// stopAll sends SIGTERM to each process in turn and checks that it exits
// 0 (or as canceled).
func stopAll(t *testing.T, procs ...*proc) {
	t.Helper()
	for _, p := range procs {
		p.cmd.Process.Signal(syscall.SIGTERM)
		if code, _, _ := p.wait(t, 30*time.Second); code != ExitOK && code != ExitCanceled {
			t.Errorf("%v exited %d on SIGTERM; stderr:\n%s", p.cmd.Args[1:], code, p.stderr.String())
		}
	}
}

// firstDiff is the first index where a and b differ.
func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestClusterRefusals: a TaskManager of another build is refused at
// registration naming both builds, and exits 1 without retrying; a job
// whose checkpoint storage is the JobManager's memory is refused naming
// it; a client of another build is refused; SIGTERM of a TaskManager
// deregisters it at once.
func TestClusterRefusals(t *testing.T) {
	_, rpcAddr, _ := startJobManager(t)
	dir := t.TempDir()
	// Another build: the same revision, other bytes.
	other := filepath.Join(dir, "weir-other")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, append(self, "another build"...), 0o755); err != nil {
		t.Fatal(err)
	}
	stranger := startProgram(t, other, "", "taskmanager", "--jobmanager", rpcAddr, "--id", "tm-x")
	if code, _, _ := stranger.wait(t, 30*time.Second); code != ExitFailed || !strings.Contains(stranger.stderr.String(), "build") ||
		strings.Count(stranger.stderr.String(), "/") < 2 {
		t.Fatalf("a TaskManager of another build exited %d; want 1 naming both builds; stderr:\n%s", code, stranger.stderr.String())
	}
	input := filepath.Join(dir, "in.tsv")
	writeKeyedInput(t, input, testseed.Rand(t, 1), 10, 2)
	client := startProgram(t, other, "", "run", "keyed-count", "--jobmanager", rpcAddr, "--input", input,
		"--output", filepath.Join(dir, "out"), "--checkpoint-dir", filepath.Join(dir, "cp"))
	if code, _, _ := client.wait(t, 30*time.Second); code != ExitFailed || !strings.Contains(client.stderr.String(), "refused the job") {
		t.Fatalf("a client of another build exited %d; want 1, refused; stderr:\n%s", code, client.stderr.String())
	}

	tm := startTaskManager(t, os.Args[0], rpcAddr, "tm-a", 1)
	code, _, stderr := runWeir(t, 30*time.Second, "run", "keyed-count", "--jobmanager", rpcAddr, "--input", input,
		"--output", filepath.Join(dir, "out"), "--checkpoint-dir", "mem://cp")
	if code != ExitFailed || !strings.Contains(stderr, "mem://cp") || !strings.Contains(stderr, "other processes") {
		t.Fatalf("a job with mem:// storage: exit %d; want 1 naming mem://cp; stderr:\n%s", code, stderr)
	}
	start := time.Now()
	tm.cmd.Process.Signal(syscall.SIGTERM)
	if code, _, _ := tm.wait(t, 20*time.Second); code != ExitOK && code != ExitCanceled {
		t.Fatalf("a TaskManager exited %d on SIGTERM; stderr:\n%s", code, tm.stderr.String())
	}
	t.Logf("the TaskManager exited %v after SIGTERM", time.Since(start))
}

// TestClusterUnsharedStorageRefused: a TaskManager that does not see the
// JobManager's checkpoint directory (here its own mount namespace hides it
// under an empty tmpfs, as another machine's disk would) refuses the job
// when it builds it, naming the storage, and the job fails at once.
func TestClusterUnsharedStorageRefused(t *testing.T) {
	if os.Getuid() != 0 {
		if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
			t.Fatal("CI: this test needs root (a mount namespace), and CI runs as root")
		}
		t.Skip("needs root: the TaskManager runs in its own mount namespace")
	}
	dir := t.TempDir()
	cp := filepath.Join(dir, "cp")
	if err := os.Mkdir(cp, 0o755); err != nil {
		t.Fatal(err)
	}
	input := filepath.Join(dir, "in.tsv")
	writeKeyedInput(t, input, testseed.Rand(t, 2), 10, 2)
	_, rpcAddr, _ := startJobManager(t)
	tm := startProgram(t, "unshare", "", "--mount", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs tmpfs "$1" && exec "$2" taskmanager --jobmanager "$3" --id tm-elsewhere`, "sh", cp, os.Args[0], rpcAddr)
	waitOutput(t, tm, regexp.MustCompile(`TaskManager registered with`))
	code, _, stderr := runWeir(t, 60*time.Second, "run", "keyed-count", "--jobmanager", rpcAddr, "--input", input,
		"--output", filepath.Join(dir, "out"), "--checkpoint-dir", cp)
	if code != ExitFailed || !strings.Contains(stderr, "tm-elsewhere") || !strings.Contains(stderr, "is not the JobManager's") ||
		!strings.Contains(stderr, cp) {
		t.Fatalf("a job whose storage a TaskManager cannot see: exit %d; want 1 naming the TaskManager and %s; stderr:\n%s", code, cp, stderr)
	}
	t.Logf("refused: %s", stderr)
}

// TestClusterKeyedCountAcrossTaskManagers: keyed-count at parallelism 2 on
// two TaskManager processes of one slot each runs to the end, its keyBy
// shuffle crossing the processes over the data plane (each process holds
// one subtask of every vertex), and commits every count exactly once.
func TestClusterKeyedCountAcrossTaskManagers(t *testing.T) {
	r := testseed.Rand(t, 361)
	dir := t.TempDir()
	input, output := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "out")
	want := writeKeyedInput(t, input, r, 5000, 40)
	jm, rpcAddr, _ := startJobManager(t)
	tms := []*proc{startTaskManager(t, os.Args[0], rpcAddr, "tm-a", 1), startTaskManager(t, os.Args[0], rpcAddr, "tm-b", 1)}
	client := startWeir(t, "", "run", "keyed-count", "--jobmanager", rpcAddr, "--input", input, "--output", output,
		"--checkpoint-dir", filepath.Join(dir, "cp"), "--parallelism", "2", "--checkpoint-interval", "100ms", "--rate", "5000")
	wantExactlyOnce(t, client, output, want, jm, tms[0], tms[1])
	if n := strings.Count(jm.stderr.String(), "checkpoint completed"); n < 3 {
		t.Errorf("the job completed %d checkpoints across the processes, want several; JobManager:\n%s", n, jm.stderr.String())
	}
	stopAll(t, append(tms, jm)...)
}

// TestClusterKeyedCountAcrossTaskManagersSurvivesKill: the same job on two
// one-slot TaskManagers, one of them killed with SIGKILL at a seeded random
// moment: the job fails over onto a spare third TaskManager (its channels
// to the survivor crossing processes again) and commits every count
// exactly once.
func TestClusterKeyedCountAcrossTaskManagersSurvivesKill(t *testing.T) {
	r := testseed.Rand(t, 362)
	dir := t.TempDir()
	input, output := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "out")
	want := writeKeyedInput(t, input, r, 6000, 40)
	jm, rpcAddr, _ := startJobManager(t)
	tms := []*proc{startTaskManager(t, os.Args[0], rpcAddr, "tm-a", 1), startTaskManager(t, os.Args[0], rpcAddr, "tm-b", 1)}
	spare := startTaskManager(t, os.Args[0], rpcAddr, "tm-c", 1)
	client := startWeir(t, "", "run", "keyed-count", "--jobmanager", rpcAddr, "--input", input, "--output", output,
		"--checkpoint-dir", filepath.Join(dir, "cp"), "--parallelism", "2", "--checkpoint-interval", "100ms", "--rate", "2000")
	victim := r.IntN(2)
	kill := time.Duration(300+r.IntN(1500)) * time.Millisecond
	time.Sleep(kill)
	if err := tms[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	name := []string{"tm-a", "tm-b"}[victim]
	t.Logf("killed %s %v after submitting", name, kill)
	wantExactlyOnce(t, client, output, want, jm)
	if !strings.Contains(jm.stderr.String(), "TaskManager "+name+" lost") {
		t.Errorf("the JobManager did not log %s's loss; stderr:\n%s", name, jm.stderr.String())
	}
	stopAll(t, tms[1-victim], spare, jm)
}

// TestClusterWindowAggAcrossTaskManagers: window-agg at parallelism 2 on
// two one-slot TaskManager processes commits the same results and late
// elements as the embedded cluster's run of the same input (punctuated
// watermarks make both deterministic).
func TestClusterWindowAggAcrossTaskManagers(t *testing.T) {
	r := testseed.Rand(t, 363)
	dir := t.TempDir()
	in := filepath.Join(dir, "events.jsonl")
	var b strings.Builder
	ts := int64(0)
	for range 4000 {
		ts += r.Int64N(20)
		e := ts - r.Int64N(80)
		if r.IntN(4) == 0 {
			e = ts - r.Int64N(2000) // far behind: late
		}
		fmt.Fprintf(&b, "{\"ts\": %d, \"key\": \"k%d\", \"value\": %d}\n", e, r.IntN(12), r.Int64N(1000)-500)
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	window := []string{"tumbling:200ms", "sliding:300ms,70ms", "session:40ms"}[r.IntN(3)]
	t.Logf("window %s", window)
	args := func(out string) []string {
		return []string{"run", "window-agg", "--input", in, "--window", window, "--out-of-orderness", "30ms", "--allowed-lateness", "300ms",
			"--output", filepath.Join(out, "results"), "--late-output", filepath.Join(out, "late"),
			"--checkpoint-dir", filepath.Join(out, "checkpoints"), "--checkpoint-interval", "100ms", "--parallelism", "2"}
	}
	embedded := filepath.Join(dir, "embedded")
	if code, _, stderr := runWeir(t, 90*time.Second, append(args(embedded), "--rest-address", "")...); code != ExitOK {
		t.Fatalf("the embedded run exited %d: %s", code, stderr)
	}
	jm, rpcAddr, _ := startJobManager(t)
	tms := []*proc{startTaskManager(t, os.Args[0], rpcAddr, "tm-a", 1), startTaskManager(t, os.Args[0], rpcAddr, "tm-b", 1)}
	clustered := filepath.Join(dir, "cluster")
	if code, _, stderr := runWeir(t, 90*time.Second, append(args(clustered), "--jobmanager", rpcAddr)...); code != ExitOK {
		t.Fatalf("the cluster's run exited %d; stderr:\n%s\nJobManager:\n%s", code, stderr, jm.stderr.String())
	}
	for _, out := range []string{"results", "late"} {
		want, got := committedLines(t, filepath.Join(embedded, out)), committedLines(t, filepath.Join(clustered, out))
		if len(want) == 0 && out == "results" {
			t.Fatal("the embedded run committed no results")
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %d lines on two TaskManagers, %d on the embedded cluster (first difference at %d)", out, len(got), len(want), firstDiff(got, want))
		}
	}
	for _, p := range append(tms, jm) {
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.wait(t, 30*time.Second)
	}
}
