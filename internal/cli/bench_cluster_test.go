package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/rest"
)

// The benchmarks of issue 36 on a JobManager and two one-slot TaskManager
// processes (bench_cluster.go, scripts/bench-cluster): the shuffle job's
// keyBy crosses the processes, every record reaches its sink, and the
// latency job's histograms come back from the TaskManagers through the
// files its sink subtasks write.
func TestBenchOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JobManager and two TaskManager processes and runs four jobs on them")
	}
	// Profiles of the JobManager and one TaskManager, written when they exit.
	dir := t.TempDir()
	profiles := []string{filepath.Join(dir, "jobmanager.prof"), filepath.Join(dir, "tm-a.prof")}
	jm, rpcAddr, restAddr := startJobManager(t, "--cpuprofile", profiles[0])
	tms := []*proc{startTaskManager(t, os.Args[0], rpcAddr, "tm-a", 1, "--cpuprofile", profiles[1]), startTaskManager(t, os.Args[0], rpcAddr, "tm-b", 1)}
	logs := func() string {
		return "JobManager:\n" + jm.stderr.String() + "\ntm-a:\n" + tms[0].stderr.String() + "\ntm-b:\n" + tms[1].stderr.String()
	}

	const events = 200_000
	code, out, errOut := runWeir(t, 60*time.Second, "bench", "shuffle", "--jobmanager", rpcAddr, "--events", strconv.Itoa(events), "--parallelism", "2")
	if code != ExitOK || !regexp.MustCompile(`^shuffle on the cluster at \S+: 200000 events in \S+ wall`).MatchString(out) {
		t.Fatalf("bench shuffle exited %d; stdout:\n%s\nstderr:\n%s\n%s", code, out, errOut, logs())
	}
	// Where the subtasks ran, and what the sink's vertex read: from the
	// JobManager, not from the client.
	c := rest.NewClient(restAddr, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	jobs, err := c.JobsOverview(ctx)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs %v, %v; want the one shuffle job", jobs, err)
	}
	job, err := c.Job(ctx, jobs[0].ID)
	if err != nil || len(job.Vertices) != 2 {
		t.Fatalf("job %+v, %v; want two vertices (source and map, filter and sink)", job, err)
	}
	for _, v := range job.Vertices {
		d, err := c.VertexDetails(ctx, job.ID, v.ID)
		if err != nil || len(d.Subtasks) != 2 || d.Subtasks[0].TaskManagerID == d.Subtasks[1].TaskManagerID {
			t.Errorf("vertex %q: subtasks %+v (%v); want one on each TaskManager", v.Name, d.Subtasks, err)
		}
	}
	if m := job.Vertices[1].Metrics; m.ReadRecords != events {
		t.Errorf("the vertex %q read %d records, want %d", job.Vertices[1].Name, m.ReadRecords, events)
	}

	code, out, errOut = runWeir(t, 60*time.Second, "bench", "latency", "--jobmanager", rpcAddr, "--keys", "100", "--duration", "400ms",
		"--warmup", "100ms", "--rate", "20000", "--buffer-timeout", "1ms")
	if code != ExitOK {
		t.Fatalf("bench latency exited %d; stdout:\n%s\nstderr:\n%s\n%s", code, out, errOut, logs())
	}
	// | 1ms | rate | p50 | p99 | p99.9 | max | p99 across (n) | p99 within (n) | ...
	row := regexp.MustCompile(`\| 1ms \| ([0-9.]+) M/s \| [0-9.]+ ms \| ([0-9.]+) ms \| [^|]+\| [^|]+\| [0-9.]+ ms \((\d+)\) \| [0-9.]+ ms \((\d+)\) \|`).FindStringSubmatch(out)
	if row == nil {
		t.Fatalf("no latency row with counts across and within processes:\n%s", out)
	}
	across, _ := strconv.Atoi(row[3])
	within, _ := strconv.Atoi(row[4])
	// 20,000/s for 0.5 s, the first 0.1 s discarded: about 8,000 records,
	// half of them from the source subtask of the other process.
	if across+within < 6000 || across+within > 10000 || across < 2000 || within < 2000 {
		t.Errorf("latency of %d records across processes and %d within, want about 4,000 each:\n%s", across, within, out)
	}
	if rate, _ := strconv.ParseFloat(row[1], 64); rate < 0.015 || rate > 0.025 {
		t.Errorf("rate achieved %v M/s, want 0.02:\n%s", rate, out)
	}

	for _, p := range append(tms, jm) {
		p.cmd.Process.Signal(syscall.SIGTERM)
		if code, _, _ := p.wait(t, 30*time.Second); code != ExitOK && code != ExitCanceled {
			t.Errorf("%v exited %d on SIGTERM; stderr:\n%s", p.cmd.Args[1:], code, p.stderr.String())
		}
	}
	for _, path := range profiles {
		// A CPU profile is gzipped protobuf.
		if b, err := os.ReadFile(path); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("--cpuprofile %s: %d bytes (%v), want a gzipped profile", path, len(b), err)
		}
	}
}

// Usage errors of the cluster flags, before anything is submitted or
// registered.
func TestBenchOnClusterUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "shuffle", "--dir", "x"}, "--dir needs --jobmanager"},
		{[]string{"bench", "shuffle", "--jobmanager", "127.0.0.1:1", "--cpuprofile", "p"}, "give weir taskmanager --cpuprofile"},
		{[]string{"bench", "chained", "--jobmanager", "127.0.0.1:1"}, "--jobmanager does not apply to bench chained"},
		{[]string{"bench", "latency", "--dir", "x"}, "--dir needs --jobmanager"},
		{[]string{"bench", "latency", "--jobmanager", "127.0.0.1:1", "--keys", "101"}, "--keys 101 must be a multiple of --parallelism 2"},
		{[]string{"taskmanager", "--jobmanager", ","}, `--jobmanager "," names no JobManager`},
		{[]string{"taskmanager", "--jobmanager", "127.0.0.1:1", "-D", "taskmanager.cpu.cores=0"}, "taskmanager.cpu.cores=0: want a positive number of cores"},
		{[]string{"taskmanager", "--jobmanager", "127.0.0.1:1,jm2"}, `"jm2" is not HOST:PORT`},
		{[]string{"run", "keyed-count", "--jobmanager", "jm:0", "--input", "in", "--output", "out"}, `"jm:0" is not HOST:PORT`},
	} {
		code, out, errOut := runCLI(tc.args...)
		if code != ExitUsage || !regexp.MustCompile(regexp.QuoteMeta(tc.want)).MatchString(errOut) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}
