package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/flinktest"
	"github.com/weirhq/weir/internal/kafkatest"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/testseed"
)

// More scenarios of docs/distributed-runtime.md's tests on real processes:
// kafka-keyed-count across TaskManager processes, SIGTERM of a
// TaskManager that runs a job, and Flink's own CLI against a
// multi-process cluster. They run in the full pass of scripts/test.

// TestClusterKafkaKeyedCountSurvivesKill: kafka-keyed-count, exactly once,
// at parallelism 2 on two one-slot TaskManager processes while input
// keeps coming; SIGKILL of the TaskManager of a sink subtask at a seeded
// random moment fails the job over onto a spare that joined meanwhile. Once the input stops and
// all of it is counted, the output topic read with read_committed holds,
// for every key, n = 1..N exactly once with the right sums.
func TestClusterKafkaKeyedCountSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a Kafka broker and four processes (runs in the full pass of scripts/test)")
	}
	brokers := kafkatest.Broker(t)
	r := testseed.Rand(t, 364)
	in, out := kafkatest.Topic(t, "in"), kafkatest.Topic(t, "out")
	kafkatest.CreateTopic(t, brokers, in, 3)
	kafkatest.CreateTopic(t, brokers, out, 2)
	jm, rpcAddr, restAddr := startJobManager(t)
	tms := map[string]*proc{"tm-a": startTaskManager(t, os.Args[0], rpcAddr, "tm-a", 1), "tm-b": startTaskManager(t, os.Args[0], rpcAddr, "tm-b", 1)}
	prod := kafkatest.StartProducer(t, brokers, in, rand.New(rand.NewPCG(r.Uint64(), r.Uint64())), 5+r.IntN(40))
	client := startWeir(t, "", "run", "kafka-keyed-count", "--jobmanager", rpcAddr, "--brokers", brokers,
		"--input-topic", in, "--output-topic", out, "--group", "g-"+out, "--guarantee", "exactly-once", "--transactional-id-prefix", "tx-"+out,
		"--checkpoint-dir", filepath.Join(t.TempDir(), "cp"), "--checkpoint-interval", "100ms", "--parallelism", "2")
	holder := sinkHolder(t, restAddr, "Kafka "+out, r)
	victim := tms[holder]
	if victim == nil {
		t.Fatalf("the sink runs on %q, not tm-a or tm-b; JobManager:\n%s", holder, jm.stderr.String())
	}
	// The spare joins once the job runs on tm-a and tm-b.
	spare := startTaskManager(t, os.Args[0], rpcAddr, "tm-c", 1)
	kill := time.Duration(200+r.IntN(1500)) * time.Millisecond
	time.Sleep(kill)
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	produced := prod.Count()
	// For the log only: a read of what is committed now may not get past
	// the killed sink's transaction while it is being aborted.
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	now, rerr := kafkatest.Read(rctx, brokers, out, true)
	rcancel()
	committed := fmt.Sprint(len(now))
	if rerr != nil {
		committed = "? (" + rerr.Error() + ")"
	}
	t.Logf("killed %s, which runs a subtask of the sink, %v after every subtask was placed: %d records produced, %s output records committed",
		holder, kill, produced, committed)
	waitStderr(t, jm, "TaskManager "+holder+" lost", 20*time.Second)
	time.Sleep(time.Duration(300+r.IntN(700)) * time.Millisecond) // input goes on across the failover
	want := keyedCounts(prod.Finish(t))
	t.Logf("%d records produced", len(want))

	// All input counted: every output record committed. Then the job is
	// canceled (it is unbounded) and the output read once more.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		recs, err := kafkatest.Read(ctx, brokers, out, true)
		cancel()
		if err == nil && len(recs) >= len(want) {
			break
		}
		if client.cmd.ProcessState != nil || time.Now().After(deadline) {
			t.Fatalf("%d of %d output records committed (%v); client:\n%s\nJobManager:\n%s\nspare:\n%s", len(recs), len(want), err,
				client.stderr.String(), jm.stderr.String(), spare.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	client.cmd.Process.Signal(syscall.SIGINT)
	if code, _, _ := client.wait(t, 30*time.Second); code != ExitCanceled {
		t.Errorf("the client exited %d on SIGINT, want %d (canceled); stderr:\n%s", code, ExitCanceled, client.stderr.String())
	}
	var got []string
	for _, rec := range kafkatest.ReadCommitted(t, brokers, out) {
		if k, _, _ := strings.Cut(string(rec.Value), "\t"); k != string(rec.Key) {
			t.Fatalf("output record %q at partition %d offset %d has the Kafka key %q", rec.Value, rec.Partition, rec.Offset, rec.Key)
		}
		got = append(got, string(rec.Value))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("read %d output records with read_committed, want %d exactly once (first difference at %d)", len(got), len(want), firstDiff(got, want))
	}
	stopAll(t, tms[map[string]string{"tm-a": "tm-b", "tm-b": "tm-a"}[holder]], spare, jm)
}

// keyedCounts is keyed-count's output for the model of a
// kafkatest.Producer (each key's values in the order written): for every
// key, "key<TAB>n<TAB>sum" for n = 1..N with the running sums, sorted.
func keyedCounts(model map[string][]int64) []string {
	var want []string
	for k, vals := range model {
		var sum int64
		for i, v := range vals {
			sum += v
			want = append(want, fmt.Sprintf("%s\t%d\t%d", k, i+1, sum))
		}
	}
	slices.Sort(want)
	return want
}

// TestClusterTaskManagerSigterm: SIGTERM of the TaskManager of a running
// job's sink deregisters it at once: with heartbeat.timeout 30s, the
// JobManager loses it within a few seconds, the job fails over to the
// spare and commits exactly once, and the TaskManager exits 0.
func TestClusterTaskManagerSigterm(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a cluster of processes (runs in the full pass of scripts/test)")
	}
	r := testseed.Rand(t, 365)
	dir := t.TempDir()
	input, output := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "out")
	want := writeKeyedInput(t, input, r, 6000, 40)
	hb := []string{"-D", "heartbeat.interval=1s", "-D", "heartbeat.timeout=30s"}
	jm, rpcAddr, restAddr := startJobManager(t, hb...)
	tms := map[string]*proc{"tm-a": startTaskManager(t, os.Args[0], rpcAddr, "tm-a", 2, hb...),
		"tm-b": startTaskManager(t, os.Args[0], rpcAddr, "tm-b", 2, hb...)}
	client := startWeir(t, "", "run", "keyed-count", "--jobmanager", rpcAddr, "--input", input, "--output", output,
		"--checkpoint-dir", filepath.Join(dir, "cp"), "--parallelism", "2", "--checkpoint-interval", "100ms", "--rate", "2000")
	time.Sleep(time.Duration(300+r.IntN(1200)) * time.Millisecond)
	holder := sinkHolder(t, restAddr, "Committed counts", r)
	leaving := tms[holder]
	if leaving == nil {
		t.Fatalf("the sink runs on %q, not a TaskManager this test started", holder)
	}
	if err := leaving.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Far sooner than heartbeat.timeout: the JobManager heard it leave.
	lost := waitStderr(t, jm, "TaskManager "+holder+" lost", 10*time.Second)
	t.Logf("SIGTERM to %s, which runs a subtask of the sink; the JobManager lost it %v later (heartbeat.timeout 30s)", holder, lost)
	if code, took, _ := leaving.wait(t, 20*time.Second); code != ExitOK {
		t.Errorf("%s exited %d %v after SIGTERM, want 0; stderr:\n%s", holder, code, took, leaving.stderr.String())
	}
	wantExactlyOnce(t, client, output, want, jm)
	stopAll(t, tms[map[string]string{"tm-a": "tm-b", "tm-b": "tm-a"}[holder]], jm)
}

// TestFlinkCLIAgainstCluster: Apache Flink's own command-line client
// against a `weir jobmanager` with a TaskManager process: `flink list`
// shows a keyed-count job submitted with `weir run --jobmanager
// --detached` as running, `flink stop --savepointPath` takes a savepoint
// and ends it FINISHED, and the job resumed from the savepoint Flink's
// client printed commits every count exactly once.
func TestFlinkCLIAgainstCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: Flink's client (a JVM per command) and a cluster of processes (runs in the full pass of scripts/test)")
	}
	flink := flinktest.Find(t)
	r := testseed.Rand(t, 366)
	dir := t.TempDir()
	input, output, cps := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "out"), filepath.Join(dir, "cps")
	want := writeKeyedInput(t, input, r, 8000, 40)
	jm, rpcAddr, restAddr := startJobManager(t)
	tm := startTaskManager(t, os.Args[0], rpcAddr, "tm-a", 2)
	code, _, stderr := runWeir(t, 30*time.Second, "run", "keyed-count", "--jobmanager", rpcAddr, "--detached", "--input", input,
		"--output", output, "--checkpoint-dir", cps, "--parallelism", "2", "--checkpoint-interval", "200ms", "--rate", "1000")
	m := regexp.MustCompile(`job ([0-9a-f]{32}) submitted to`).FindStringSubmatch(stderr)
	if code != ExitOK || m == nil {
		t.Fatalf("weir run --detached: exit %d, want 0 and the job's id; stderr:\n%s", code, stderr)
	}
	id := m[1]
	sinkHolder(t, restAddr, "Committed counts", r) // every subtask placed

	// Flink prints "<date> : <job id> : <name> (<state>)" per job.
	line := regexp.MustCompile(regexp.QuoteMeta(" : "+id+" : ") + `\S+ \(RUNNING\)`)
	if code, out := flink.Run(t, "list", "-m", restAddr); code != 0 || !line.MatchString(out) {
		t.Fatalf("flink list: exit %d, want 0 and a line matching %q; output:\n%s", code, line, out)
	}
	sps := filepath.Join(dir, "sps")
	code, out := flink.Run(t, "stop", "--savepointPath", sps, "-m", restAddr, id)
	if code != 0 {
		t.Fatalf("flink stop: exit %d; output:\n%s\nJobManager:\n%s", code, out, jm.stderr.String())
	}
	loc := flinktest.SavepointWritten(t, out, sps)
	c := rest.NewClient(restAddr, nil)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		jobs, err := c.JobsOverview(ctx)
		cancel()
		if err == nil && len(jobs) == 1 && jobs[0].State == "FINISHED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after flink stop the job is %+v, %v; want FINISHED", jobs, err)
		}
	}
	finished := regexp.MustCompile(regexp.QuoteMeta(" : "+id+" : ") + `\S+ \(FINISHED\)`)
	if code, out := flink.Run(t, "list", "-a", "-m", restAddr); code != 0 || !finished.MatchString(out) {
		t.Fatalf("flink list -a: exit %d, want 0 and a line matching %q; output:\n%s", code, finished, out)
	}
	stopped := len(committedLines(t, output))
	if stopped >= len(want) {
		t.Fatalf("the job had committed all %d lines before flink stop: the test needs it stopped midway", stopped)
	}
	client := startWeir(t, "", "run", "keyed-count", "--jobmanager", rpcAddr, "--input", input, "--output", output,
		"--checkpoint-dir", cps, "--from", loc, "--parallelism", "2", "--checkpoint-interval", "200ms")
	wantExactlyOnce(t, client, output, want, jm, tm)
	t.Logf("flink stop after %d of %d lines committed; savepoint %s", stopped, len(want), loc)
	stopAll(t, tm, jm)
}
