package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/weirhq/weir/connector/kafka"
	"github.com/weirhq/weir/internal/benchjobs"
	"github.com/weirhq/weir/internal/cpumeter"
)

// benchKafka is `weir bench kafka`: Kafka -> map -> Kafka with a
// delivery guarantee, against a running broker. It creates fresh input and
// output topics, preloads the input (not measured), runs the bounded job
// and measures this process's CPU and wall time from the job's start to its
// end (the final checkpoint committed), and the broker JVM's CPU over the
// same interval, read from /proc. Then it checks the output with a
// read_committed consumer (not measured) and deletes both topics.
func benchKafka(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("bench kafka")
	brokers := fs.String("brokers", "127.0.0.1:9092", "")
	guarantee := fs.String("guarantee", "", "")
	records := fs.Int64("records", 5_000_000, "")
	recordBytes := fs.Int("record-bytes", 100, "")
	parallelism := fs.Int("parallelism", 2, "")
	partitions := fs.Int("partitions", 0, "")
	interval := fs.Duration("checkpoint-interval", 5*time.Second, "")
	brokerPID := fs.Int("broker-pid", 0, "")
	brokerDir := fs.String("broker-dir", "", "")
	cpuprofile := fs.String("cpuprofile", "", "")
	timeout := fs.Duration("timeout", 30*time.Minute, "")
	keepTopics := fs.Bool("keep-topics", false, "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("bench kafka takes no positional arguments, got %q", strings.Join(pos, " "))
	}
	seeds, err := brokerList(*brokers)
	if err != nil {
		return err
	}
	if *guarantee == "" {
		return usagef("bench kafka needs --guarantee none, at-least-once or exactly-once")
	}
	g, err := kafka.ParseGuarantee(*guarantee)
	if err != nil {
		return usagef("--guarantee %q: want none, at-least-once or exactly-once", *guarantee)
	}
	if *partitions == 0 {
		*partitions = 2 * *parallelism
	}
	switch {
	case *records < 1 || *records > 10_000_000_000:
		return usagef("--records must be between 1 and 10000000000, got %d", *records)
	case *recordBytes < 1 || *recordBytes > 1<<20:
		return usagef("--record-bytes must be between 1 and 1048576, got %d", *recordBytes)
	case *parallelism < 1 || *parallelism > 1024:
		return usagef("--parallelism of a benchmark must be between 1 and 1024, got %d", *parallelism)
	case *partitions < 1 || *partitions > 10_000:
		return usagef("--partitions must be between 1 and 10000, got %d", *partitions)
	case *interval < 0:
		return usagef("--checkpoint-interval must not be negative, got %v", *interval)
	case *interval == 0 && g != kafka.None:
		return usagef("--guarantee %s needs checkpoints: --checkpoint-interval 0 only goes with --guarantee none", *guarantee)
	case *interval > 0 && *interval < 10*time.Millisecond:
		return usagef("--checkpoint-interval %v is below 10ms", *interval)
	case *brokerPID < 0:
		return usagef("--broker-pid must be a process id, got %d", *brokerPID)
	case *brokerPID > 0 && *brokerDir != "":
		return usagef("give --broker-pid or --broker-dir, not both")
	case *timeout <= 0:
		return usagef("--timeout must be positive, got %v", *timeout)
	}
	pid := *brokerPID
	if *brokerDir != "" {
		b, err := os.ReadFile(filepath.Join(*brokerDir, "broker.pid"))
		if err != nil {
			return usagef("--broker-dir %s: no broker pid file (scripts/kafka-broker writes broker.pid there): %v", *brokerDir, err)
		}
		if pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil || pid < 1 {
			return usagef("--broker-dir %s: broker.pid holds %q, not a process id", *brokerDir, strings.TrimSpace(string(b)))
		}
	}
	if pid > 0 {
		if _, err := procCPU(pid); err != nil {
			return usagef("broker pid %d: %v", pid, err)
		}
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	run := fmt.Sprintf("weir-bench-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9)
	in, out := run+"-in", run+"-out"
	for _, t := range []string{in, out} {
		if err := benchjobs.KafkaCreateTopic(ctx, seeds, t, *partitions); err != nil {
			return err
		}
	}
	if !*keepTopics {
		defer func() {
			dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
			defer dcancel()
			if err := benchjobs.KafkaDeleteTopics(dctx, seeds, in, out); err != nil {
				fmt.Fprintf(stdout, "bench kafka: deleting the topics: %v\n", err)
			}
		}()
	}
	t0 := time.Now()
	if err := benchjobs.KafkaPreload(ctx, seeds, in, *records, *recordBytes); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "kafka: preloaded %d records of %d bytes into %s (%d partitions) in %v\n",
		*records, *recordBytes, in, *partitions, time.Since(t0).Round(time.Millisecond))
	dir, err := os.MkdirTemp("", "weir-bench-kafka-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	opts := benchjobs.KafkaMapOptions{Brokers: seeds, InputTopic: in, OutputTopic: out, Guarantee: g,
		Parallelism: *parallelism, CheckpointInterval: *interval, CheckpointDir: dir}
	if g == kafka.ExactlyOnce {
		opts.TransactionalIDPrefix = run
	}
	stopProfile, err := startCPUProfile("bench kafka", *cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()

	var b0 time.Duration
	if pid > 0 {
		b0, _ = procCPU(pid)
	}
	start := cpumeter.Now()
	n, err := benchjobs.KafkaMap(ctx, opts)
	if err != nil {
		return err
	}
	cpu, wall := cpumeter.Now().Since(start)
	var bcpu time.Duration
	if pid > 0 {
		b1, err := procCPU(pid)
		if err != nil {
			return fmt.Errorf("broker pid %d after the run: %v", pid, err)
		}
		bcpu = b1 - b0
	}
	stopProfile() // the run only, not the count of what it wrote

	got, gotBytes, err := benchjobs.KafkaCountCommitted(ctx, seeds, out)
	if err != nil {
		return err
	}
	if n != *records || got != *records || gotBytes != *records*int64(*recordBytes) {
		return fmt.Errorf("bench kafka: %d records preloaded, the map saw %d, a read_committed consumer read %d (%d bytes) from %s", *records, n, got, gotBytes, out)
	}
	cp := "no checkpoints"
	if *interval > 0 {
		cp = "checkpoints every " + interval.String()
	}
	fmt.Fprintf(stdout, "kafka %s: %d records of %d bytes, p=%d, %d partitions, %s: %v wall, %v CPU (%.2f cores): %.3f million records/s per core, %.3f million/s wall\n",
		*guarantee, n, *recordBytes, *parallelism, *partitions, cp, wall.Round(time.Millisecond), cpu.Round(time.Millisecond),
		cpu.Seconds()/wall.Seconds(), float64(n)/cpu.Seconds()/1e6, float64(n)/wall.Seconds()/1e6)
	if pid > 0 {
		fmt.Fprintf(stdout, "kafka %s: broker (pid %d) %.2f s CPU over the run (%.2f cores), %.2f s per million records\n",
			*guarantee, pid, bcpu.Seconds(), bcpu.Seconds()/wall.Seconds(), bcpu.Seconds()/(float64(n)/1e6))
	} else {
		fmt.Fprintf(stdout, "kafka %s: broker CPU not measured (give --broker-pid or --broker-dir)\n", *guarantee)
	}
	fmt.Fprintf(stdout, "kafka %s: output checked: %d records, %d bytes read with read_committed from %s\n", *guarantee, got, gotBytes, out)
	return nil
}

// procCPU is the user + system CPU time of process pid so far, from
// /proc/PID/stat (utime and stime, in clock ticks of 1/100 s: Linux's
// USER_HZ).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading its CPU time: %v", err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces and parentheses
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state): utime is field 14, stime 15
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	return time.Duration(u+st) * (time.Second / 100), nil
}
