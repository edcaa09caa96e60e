package kafka_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/connector/kafka"
	"github.com/weirhq/weir/internal/crashpoint"
)

const crashRecords = 3000

// crashJob runs the job of the crash test: crashRecords numbers, rate
// limited, into the exactly-once sink at parallelism 2, checkpointing into
// dir every 30 ms; resume is Config.ResumeFrom.
func crashJob(brokers []string, dir, resume string) error {
	snk, err := kafka.NewSink(kafka.SinkConfig{Brokers: brokers, Topic: "out", Guarantee: kafka.ExactlyOnce, TransactionalIDPrefix: "crash",
		CrashHook: crashpoint.Hit}, strSer)
	if err != nil {
		return err
	}
	env := weir.NewEnvironment(weir.Config{Parallelism: 2, ResumeFrom: resume,
		Checkpointing: &weir.CheckpointConfig{Interval: 30 * time.Millisecond, Dir: dir},
		Restart:       map[string]string{"restart-strategy.type": "none"}})
	nums := weir.Generate(env, crashRecords, 15000, func(i int64) int64 { return i })
	out := weir.Map(nums, func(i int64) string { return fmt.Sprintf("k%d:%d", i%13, i) })
	weir.SinkToCommitting[string, kafka.Committable](out, snk, "kafka")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = env.Execute(ctx, "kafka-crash")
	return err
}

// The process dies (SIGKILL) in each window of the exactly-once protocol;
// the job resumed from its latest checkpoint writes every record exactly
// once for read_committed consumers. kfake runs in the test process and
// outlives the killed child process that runs the job.
func TestCrashWindows(t *testing.T) {
	if os.Getenv("KAFKA_SINK_CRASH_CHILD") == "1" {
		if err := crashJob(strings.Split(os.Getenv("KAFKA_SINK_BROKERS"), ","), os.Getenv("KAFKA_SINK_CK"), ""); err != nil {
			fmt.Fprintln(os.Stderr, "job:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("runs four child processes")
	}
	want := make([]string, crashRecords)
	for i := range int64(crashRecords) {
		want[i] = fmt.Sprintf("k%d:%d", i%13, i)
	}
	slices.Sort(want)
	for _, point := range []string{"kafka-sink-write:1500", "kafka-sink-after-precommit:3", "kafka-sink-before-commit:3", "kafka-sink-after-commit:3"} {
		brokers := cluster(t)
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWindows$")
		// Its own TMPDIR: the killed child cannot remove its job's
		// temporary state directory (each run left one in /tmp); the
		// test's cleanup does.
		cmd.Env = append(os.Environ(), "KAFKA_SINK_CRASH_CHILD=1", "KAFKA_SINK_BROKERS="+strings.Join(brokers, ","),
			"KAFKA_SINK_CK="+dir, crashpoint.EnvVar+"="+point, "TMPDIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(err.Error(), "signal: killed") {
			t.Fatalf("%s: the child was not killed at the crash point (%v):\n%s", point, err, out)
		}
		if err := crashJob(brokers, dir, "latest"); err != nil {
			t.Fatalf("%s: the resumed job: %v", point, err)
		}
		got := all(readTopic(t, brokers, true))
		if !slices.Equal(got, want) {
			dup, miss := diff(got, want)
			t.Fatalf("%s: read_committed reads %d records, want %d (duplicates %v, missing %v)", point, len(got), len(want), head(dup), head(miss))
		}
		t.Logf("%s: %d records in the log, read_committed reads the %d of the input once", point, len(all(readTopic(t, brokers, false))), len(got))
	}
}
