package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/launch"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/jobs/badrecords"
	"github.com/weirhq/weir/jobs/clicks"
	"github.com/weirhq/weir/jobs/frauddetection"
	"github.com/weirhq/weir/jobs/keyedcount"
	"github.com/weirhq/weir/jobs/windowagg"
	"github.com/weirhq/weir/jobs/wordcount"
)

// Exit codes, the same for every command and job.
const (
	ExitOK       = 0   // success
	ExitFailed   = 1   // the job (or request) failed
	ExitUsage    = 2   // the command line is wrong
	ExitCanceled = 130 // canceled by the user: SIGINT, SIGTERM, the REST API or weir cancel
)

const usage = `weir: a stream processor in the family of Apache Flink.

Usage:
  weir version                 print the version
  weir run <job> [flags]       run a built-in job on the embedded local cluster
  weir run <job> --jobmanager ADDR [--detached] [flags]
                               submit a built-in job to a running JobManager
                               (session mode) and follow it to its end (Ctrl-C
                               cancels it; --detached returns once it is
                               submitted); paths are sent absolute, and every
                               process must see them
  weir jobmanager [--rpc-address A] [--rest-address A] [--log-level L]
                  [--checkpoint-dir URL] [--advertised-address HOST]
                  [-D heartbeat.interval=D] [-D heartbeat.timeout=D]
                  [-D high-availability.KEY=V] [-D scheduler-mode=reactive]
                  [--cpuprofile F]
                               run a JobManager: TaskManagers and clients reach
                               it at --rpc-address (default 127.0.0.1:6123), its
                               REST API at --rest-address (default
                               127.0.0.1:8081, "" for none); prints
                               "JobManager ready: rpc A rest A"; a TaskManager
                               silent for heartbeat.timeout (default 5s;
                               heartbeats every heartbeat.interval, 1s; give
                               every process the same) is lost; SIGTERM cancels
                               its jobs and exits; --checkpoint-dir is the
                               checkpoint directory of jobs submitted without
                               one (Flink's state.checkpoints.dir); --cpuprofile
                               writes a CPU profile of the process's life to F
                               at exit. High availability
                               (docs/high-availability.md): with
                               -D high-availability.type=etcd (and
                               high-availability.etcd.endpoints=H:P,...) or
                               =kubernetes (kubernetes.namespace=NS; outside a
                               pod also high-availability.kubernetes.api-server,
                               .token-file, .ca-file), JobManagers of one
                               high-availability.cluster-id elect a leader
                               (high-availability.leader-election.lease-duration,
                               default 6s; .renew-deadline 4s; .retry-period
                               1s): it prints "JobManager contending: rpc A rest
                               A", the leader runs the jobs and publishes its
                               addresses (--advertised-address HOST when it
                               listens on every interface), a standby refuses
                               calls naming the leader; a new leader runs the
                               unfinished jobs again from their latest
                               checkpoint; SIGTERM resigns, leaving the jobs to
                               the next leader. -D scheduler-mode=reactive
                               (Flink's reactive mode, for one job per
                               cluster): a job runs at the parallelism of every
                               task slot and, when TaskManagers join or leave
                               and the slots stay changed for
                               jobmanager.adaptive-scheduler.resource-
                               stabilization-timeout (default 2s), runs again
                               at the new parallelism from its latest
                               checkpoint
  weir taskmanager --jobmanager ADDR [--slots N] [--id ID] [--state-dir D]
                  [--data-address A] [--advertised-data-address A]
                  [--process-memory S] [--network-memory S]
                  [--heap-state-memory S] [--log-level L]
                  [-D heartbeat.interval=D] [-D heartbeat.timeout=D]
                  [-D taskmanager.network.tcp.user-timeout=D]
                  [-D taskmanager.cpu.cores=N] [--cpuprofile F]
                               run a TaskManager of N task slots (default 1)
                               that registers with the JobManager at ADDR (with
                               high availability, every JobManager's: A,B; it
                               follows the leader a standby names) under
                               ID (Flink's taskmanager.resource-id; default
                               host:pid), retrying with backoff for up to 5 min;
                               a TaskManager of another build is refused; when
                               its session with the JobManager ends it cancels
                               what it runs and registers again; SIGTERM
                               deregisters it at once. --process-memory,
                               --network-memory and --heap-state-memory mean
                               what they mean for weir run (weir help run), for
                               this process. Other TaskManagers fetch its
                               subtasks' output at --data-address (default
                               127.0.0.1:0; with no host, as ":0", it listens
                               everywhere and advertises the address it
                               reaches the JobManager from, or
                               --advertised-data-address when given: behind NAT,
                               a port forward or a proxy), so one job's
                               subtasks run on several TaskManagers
                               (docs/deployment.md); a data connection whose
                               sent data or keepalive probes go unacknowledged
                               for taskmanager.network.tcp.user-timeout
                               (default 5s) fails its tasks; it runs Go code on
                               at most taskmanager.cpu.cores cores at once
                               (GOMAXPROCS; default: the slots, one core per
                               slot as in Flink; the GOMAXPROCS environment
                               variable wins); --cpuprofile as for jobmanager
  weir bench <name> [flags]    run an engine benchmark and report events/s per core:
                               chained (--events N), shuffle (--events N --parallelism N),
                               wordcount (--size-mb N --parallelism N),
                               keyed (--events N --parallelism N --keys K
                               --state-backend hashmap|pebble), window (10 s tumbling
                               count; same flags), intervaljoin (same flags;
                               --events per side); each of these six also
                               takes --cpuprofile F (a profile of the run),
                               savepoint (--state 1gb --state-backend hashmap|pebble
                               --format canonical|native --parallelism N
                               --restore-parallelism N,M --value-bytes N --dir D
                               --timeout 30m --cpuprofile F; as the first word)
                               kafka (Kafka -> map -> Kafka against a running broker:
                               --brokers H:P --guarantee none|at-least-once|exactly-once
                               --records N --record-bytes 100 --parallelism N
                               --partitions K (default 2N) --checkpoint-interval 5s
                               --broker-pid PID | --broker-dir D (the broker's CPU)
                               --cpuprofile F --timeout 30m --keep-topics; as the
                               first word)
                               latency (--keys K --parallelism N --duration 10s
                               --rate R --buffer-timeout D --warmup 1s: p50/p99/p99.9
                               of the keyed job at half its maximum throughput)
                               shuffle and latency also take --jobmanager ADDR
                               [--dir D]: each job runs on that cluster (its
                               checkpoints, and latency's per-subtask results,
                               in a new folder under D, default the temporary
                               directory, which every process must see);
                               shuffle then reports events and wall time (its
                               CPU is the cluster's: scripts/bench-cluster),
                               latency splits p99 into records that crossed
                               processes and the others (--keys a multiple of
                               --parallelism)
  weir list [--address A]      list the jobs of a running cluster
  weir cancel <job-id> [--address A]
                               cancel a job of a running cluster
  weir savepoint <job-id> [--dir URL] [--format canonical|native] [--address A]
                               take a savepoint of a running job into a folder
                               savepoint-... under URL; prints its path (a
                               relative --dir is in the caller's directory)
  weir savepoint inspect PATH [--json]
                               say what a savepoint or checkpoint holds
                               (weir help savepoint inspect)
  weir stop <job-id> [--dir URL] [--drain] [--format F] [--address A]
                               stop a job with a final savepoint (sinks commit
                               it; --drain first fires every event-time timer
                               and window); prints its path
  weir nexmark generate --events N --output FILE [--tps R] [--seed S]
                               [--base-time MS]: write N events of Nexmark's
                               generator as JSON lines (FILE may be -): R
                               events per second of event time
                               (default 10000000); seed 0 (the default) gives
                               Nexmark's own events; event time starts at
                               --base-time ms since the epoch (default
                               2026-01-01T00:00:00Z); docs/nexmark.md
  weir nexmark run --query qN|all --events N [--tps R] [--seed S]
                               [--parallelism P] [--state-backend hashmap|pebble]
                               [--checkpoint-interval D] [--checkpoint-dir URL]
                               [--state-dir DIR] [--input FILE]
                               [--output FILE] [--network-memory S]
                               [--buffer-size S] [--heap-state-memory S]
                               [--cpuprofile F]: run
                               Nexmark queries on the embedded cluster over
                               generated events (or a file from generate);
                               results are discarded, or
                               written as JSON lines (the final table for
                               updating queries; a folder for all); prints a
                               JSON summary per query (events/s per core of
                               process CPU); the last checkpoint is kept in
                               --checkpoint-dir if given (by default checkpoints
                               go to a temporary directory, removed after the run)
  weir help [<command>]        print this text, or one command's help (as
                               weir <command> --help or -h)

Built-in jobs:
  wordcount   count words: [--input PATH] [--output PATH]
              (without --input: counts a sample text; without --output: prints
              the top 20 words); it runs in batch mode: --batch-state-memory S
              bounds its counts' memory per subtask (default 1gb)
  clicks      a live stream of page clicks with a rolling count per page;
              runs until Ctrl-C or --count: [--rate N] [--count N]
              [--savepoint-dir URL] [--from PATH]; it takes no checkpoints,
              but weir savepoint and weir stop work on it, and --from a
              savepoint goes on counting where it left off
  fraud-detection
              alerts on a transaction above 500.00 right after one below 1.00
              on the same account within a minute: --input PATH --output PATH
              [--max-out-of-orderness D]
  keyed-count for each line key<TAB>value, the key's running count and sum
              (key<TAB>n<TAB>sum), exactly once across failures and restarts:
              --input PATH --output DIR --checkpoint-dir URL
              [--checkpoint-interval D] [--unaligned] [--rate N] [--retained N]
              [--from latest|PATH]; killed, it resumes with --from latest
  kafka-keyed-count
              keyed-count between Kafka topics: reads records key<TAB>value
              (read_committed), writes key<TAB>n<TAB>sum keyed by key:
              --input-topic T --output-topic T [--brokers H:P,...]
              [--group G] [--guarantee none|at-least-once|exactly-once]
              [--transactional-id-prefix P] [--bounded] and the checkpoint
              flags (--checkpoint-dir is needed unless --guarantee none)
  window-agg  per key and event-time window, count, sum, min and max of JSON
              lines {"ts": MS, "key": "K", "value": N}: --input PATH
              --output PATH --window tumbling:SIZE|sliding:SIZE,SLIDE|session:GAP
              [--max-out-of-orderness D] [--allowed-lateness D]
              [--watermarks punctuated|periodic] [--late-output PATH]
              [--rate N] and the checkpoint flags (outputs are then
              directories, written exactly once)

  PATH may be "-" for standard input or output; an input may be a file, a
  directory of files (names starting with . or _ are skipped) or a pipe.
  An output that is a directory of part files (keyed-count; window-agg with
  checkpoints) may not be "-"; no output may be an input, lie inside an input
  directory or hold an input. A flag given an empty value ('') is a usage
  error: leave the flag out for its default.

Kafka (kafka-keyed-count):
  --brokers LIST         bootstrap brokers, host:port[,host:port...] (default
                         127.0.0.1:9092, where scripts/kafka-broker starts one)
  --input-topic T        the topic read (its records' values are key<TAB>value)
  --output-topic T       the topic written (must exist)
  --group G              consumer group the input offsets of completed
                         checkpoints are committed to; a fresh start reads from
                         its committed offsets (default: none, from the earliest)
  --guarantee G          none, at-least-once or exactly-once (default): with
                         exactly-once each checkpoint's output is a Kafka
                         transaction committed when the checkpoint completes
  --transactional-id-prefix P
                         required with exactly-once: the prefix of the sink's
                         transactional ids, unique to this job and the same
                         across its restarts
  --bounded              stop at the input's end offsets current at start;
                         exit 0 once everything before them is committed
  A record that is not key<TAB>value fails the job, naming its topic,
  partition and offset (see Bad records; --dead-letter-topic T is where
  dead-letter writes them, with the output's guarantee).

Checkpoints (keyed-count, window-agg, kafka-keyed-count):
  --checkpoint-dir URL   where checkpoints go: a directory, file:///dir, s3://bucket/prefix
  --checkpoint-interval D  between checkpoints (default 1s; 0: none periodically,
                         only savepoints and the final one at the end of input)
  --unaligned            unaligned checkpoints (barriers overtake in-flight data)
  --incremental          with --state-backend pebble: checkpoints upload only the
                         state files the previous ones lack (Pebble's native
                         format; execution.checkpointing.incremental)
  --retained N           completed checkpoints kept (state.checkpoints.num-retained,
                         default 1); with --from, across the job's earlier runs
  --savepoint-dir URL    default target of weir savepoint and weir stop without --dir
                         (state.savepoints.dir)
  --checkpoint-write-memory S
                         most memory the job's checkpoint and savepoint writes
                         buffer at once (default 64mb, at least 5mb): a write
                         holds 2mb on a file store, 5mb on S3; past the bound,
                         subtasks upload in turns
  --channel-state-memory S
                         most input channel state one subtask copies for an
                         unaligned checkpoint (default 256mb, at least 64kb);
                         past it the subtask declines the checkpoint, naming it
  --from latest|PATH     resume from the newest complete snapshot of the job in
                         --checkpoint-dir: a checkpoint, or a savepoint the job took
                         (weir stop's) if newer (none: start from the beginning);
                         or from a checkpoint's or a savepoint's path (also moved, or in
                         an object store; for canonical savepoints, at any state
                         backend and any parallelism up to the savepoint's max
                         parallelism: see --max-parallelism); a job that reads
                         files resumes with the same --input (another is refused)
  --allow-non-restored-state
                         with --from: skip (and log) state of operators the job no
                         longer has, instead of failing
  One run at a time writes a job's checkpoints: a run holds the job's lease in
  --checkpoint-dir, and a second run of it there is refused, naming the first
  (a killed run's lease is taken over at once on this machine, after 10s elsewhere).

Flags of run (all jobs):
  --parallelism N        default parallelism, 1 to 32768 (default 1)
  --max-parallelism N    key groups of keyed state (pipeline.max-parallelism), the
                         highest parallelism a savepoint or checkpoint of the job
                         can be resumed at; fixed when the job first runs (default
                         128, or 1.5 times --parallelism rounded up to a power of 2)
  --address A            where the REST API listens (default 127.0.0.1:8081, or a
                         free port when that one is taken; "" for none; an address
                         given explicitly must be free; also as http://HOST:PORT);
                         alias --rest-address
  --buffer-timeout D     longest a partly filled network buffer waits (default
                         100ms; 0 sends after every batch)
  --buffer-size S        size of network buffers (default 32kb)
  --process-memory S     memory the whole process may use
                         (taskmanager.memory.process.size; default the cgroup's
                         limit, else the machine's memory): the Go soft limit is
                         90% of it, and a job whose live heap stays above 80% of
                         it fails, naming it, before the OS kills the process
  --network-memory S     network buffers each TaskManager may hold at once
                         (taskmanager.memory.network.max; default 10% of the
                         process memory, at most 4gb)
  --state-backend B      where keyed state lives: hashmap (default) or pebble
  --heap-state-memory S  bound of the hashmap backend's keyed state (tables,
                         what values point to, timers) per TaskManager
                         (default 40% of the process memory); past it the
                         job fails, naming it
  --log-level L          debug, info, warn or error (default warn)

Bad records (keyed-count, window-agg, fraud-detection, kafka-keyed-count):
  --bad-records P        what an input line (record) the job cannot parse does:
                         fail (default: the job fails at once, exit 1, naming
                         file and line, or topic/partition/offset), skip, or
                         dead-letter; skipped and dead-lettered ones are counted
                         in the Parse operator's metric numBadRecords
  --dead-letter PATH     with dead-letter: where bad lines go, one JSON line each
                         {"source": "file:line", "error": ..., "record": ...}; with
                         checkpoints a directory written exactly once, like --output
  --dead-letter-topic T  the same for kafka-keyed-count (source topic/partition/offset)
  Blank lines (empty or only whitespace) are skipped and a UTF-8 byte order
  mark at the start of a file is ignored, in every job.

Restarts (all jobs):
  --restart-strategy S   none, fixed-delay, failure-rate or exponential-delay
                         (Flink's restart-strategy.type; default exponential-delay
                         with checkpoints, none without)
  -D KEY=VALUE           a setting of that strategy by Flink's key, repeatable:
                         restart-strategy.fixed-delay.attempts (default 1),
                         .fixed-delay.delay (1 s), .failure-rate.max-failures-per-interval
                         (1), .failure-rate.failure-rate-interval (1 min),
                         .failure-rate.delay (1 s), .exponential-delay.initial-backoff
                         (1 s), .max-backoff (1 min), .backoff-multiplier (1.5),
                         .reset-backoff-threshold (1 h), .jitter-factor (0.1),
                         .attempts-before-reset-backoff (no limit); e.g.
                         --restart-strategy fixed-delay -D restart-strategy.fixed-delay.attempts=3
  -D slot.request.timeout=D
                         how long an attempt waits for free task slots before it
                         fails through the restart strategy (Flink's name; default
                         5 min; the embedded cluster refuses a job it has too few
                         slots for at once)
  Errors that a restart cannot fix (a bad record under fail, an int64 overflow,
  a missing or corrupt checkpoint file, a standard input that was partly read,
  a missing Kafka topic) fail the job at once whatever the strategy.

Sizes are bytes or a number with kb, mb or gb (binary units); durations are
Go durations such as 500ms or 2m.

Addresses (list, cancel, savepoint, stop):
  --address A            the REST API of the cluster: HOST:PORT, or the
                         http://HOST:PORT that weir run prints (a trailing / is
                         fine; https:// for one behind a TLS proxy); default
                         127.0.0.1:8081; alias --rest-address

Aliases (old names that still work; messages use the name given):
  --rest-address         --address (every command)
  --out-of-orderness     --max-out-of-orderness (weir run window-agg)
  --backend              --state-backend (weir bench)

Exit codes: 0 success, 1 the job failed, 2 usage error, 130 canceled (Ctrl-C,
SIGTERM, the REST API or weir cancel). Ctrl-C cancels the job; a second Ctrl-C
exits at once.
Signals: SIGINT (Ctrl-C), SIGTERM, SIGHUP and SIGQUIT (Ctrl-\) each cancel the
job (exit 130; SIGHUP stays ignored under nohup); a second signal exits at once.
A second SIGQUIT first prints every goroutine's stack to stderr; with
WEIR_TRACEBACK=1 the first one does too (and an internal error shows where).
`

// exitNow ends the process at once; tests replace it.
var exitNow = os.Exit

// Main runs the command line args and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "weir: internal error: %v\n", r)
			if os.Getenv("WEIR_TRACEBACK") != "" {
				stderr.Write(debug.Stack())
			} else {
				fmt.Fprintln(stderr, "weir: please report it with the command that caused it (WEIR_TRACEBACK=1 shows where)")
			}
			code = ExitFailed
		}
	}()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	ctx, stop := interruptible(stderr)
	defer stop()
	var err error
	switch args[0] {
	case "version", "--version", "-version":
		if len(args) > 1 {
			if isHelpFlag(args[1]) {
				err = errHelp
			} else {
				err = usagef("version takes no arguments")
			}
			break
		}
		fmt.Fprintf(stdout, "weir %s (%s %s/%s)\n", launch.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	case "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
	case "help":
		err = help(args[1:], stdout)
	case "run":
		err = run(ctx, args[1:], stdout, stderr)
	case "bench":
		err = bench(ctx, args[1:], stdout, stderr)
	case "list":
		err = list(ctx, args[1:], stdout)
	case "cancel":
		err = cancel(ctx, args[1:], stdout)
	case "savepoint":
		if len(args) > 1 && args[1] == "inspect" {
			return runSavepointInspect(ctx, args[2:], stdout, stderr)
		}
		err = takeSavepoint(ctx, args[1:], stdout, stderr) // savepoint.go
	case "stop":
		err = stopJob(ctx, args[1:], stdout, stderr) // savepoint.go
	case "nexmark":
		err = nexmarkCommand(ctx, args[1:], stdout) // nexmark.go
	case "jobmanager":
		err = jobManagerCommand(ctx, args[1:], stdout, stderr) // cluster.go
	case "taskmanager":
		err = taskManagerCommand(ctx, args[1:], stdout, stderr) // cluster.go
	default:
		err = usagef("unknown command %q", args[0])
	}
	return report(err, args[0], ctx, stdout, stderr)
}

// help is `weir help [<command>]`: the whole text, or one command's.
func help(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return nil
	}
	if isHelpFlag(args[0]) {
		args = []string{"help"}
	}
	if len(args) > 1 && args[0] == "savepoint" && args[1] == "inspect" {
		fmt.Fprint(stdout, inspectUsage)
		return nil
	}
	text, ok := commandHelp(args[0])
	if !ok {
		return usagef("help: unknown command %q (commands: %s)", args[0], strings.Join(commands, ", "))
	}
	fmt.Fprint(stdout, text)
	return nil
}

func isHelpFlag(a string) bool { return a == "-h" || a == "--help" || a == "-help" }

// report prints one message for err of command cmd and returns the exit code.
func report(err error, cmd string, ctx context.Context, stdout, stderr io.Writer) int {
	var ue usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errHelp):
		text, ok := commandHelp(cmd)
		if !ok {
			text = usage
		}
		fmt.Fprint(stdout, text)
		return ExitOK
	case errors.As(err, &ue):
		if _, ok := commandHelp(cmd); ok && cmd != "help" {
			fmt.Fprintf(stderr, "weir: %v\nRun 'weir help %s' for usage.\n", err, cmd)
		} else {
			fmt.Fprintf(stderr, "weir: %v\nRun 'weir help' for usage.\n", err)
		}
		return ExitUsage
	case errors.Is(err, weir.ErrCanceled):
		fmt.Fprintln(stderr, "weir: the job was canceled")
		return ExitCanceled
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "weir: canceled")
		return ExitCanceled
	}
	fmt.Fprint(stderr, failureMessage(err))
	return ExitFailed
}

// failureMessage is what the command prints when it fails: the error, and
// when a task panicked, the lines of its stack that the job's error carries
// (the panic site and the user's frames first).
func failureMessage(err error) string {
	// Errors of the library carry its "weir: " prefix already.
	return fmt.Sprintf("weir: %s\n", strings.TrimPrefix(err.Error(), "weir: "))
}

// signals routes SIGINT, SIGTERM, SIGHUP and SIGQUIT to the command running
// now: each cancels it. The handler is installed once and never removed: a
// signal that arrives while the process exits (after its command returned)
// must not kill it with the default action and a misleading status, so then
// it is swallowed.
var signals struct {
	once   sync.Once
	mu     sync.Mutex // guards active
	active *session   // nil when no command runs
}

// session is one command's view of the signals.
type session struct {
	cancel   context.CancelFunc
	stderr   io.Writer
	received int
}

// routeSignals runs for the life of the process (tests that check for leaked
// goroutines ignore it by this name). The first signal cancels the command
// (exit 130); a second one exits at once with 130. A second SIGQUIT first
// writes every goroutine's stack to stderr (the first one too with
// WEIR_TRACEBACK set): Go's own SIGQUIT dump, without its exit code 2.
func routeSignals(ch <-chan os.Signal) {
	for s := range ch {
		signals.mu.Lock()
		a := signals.active
		if a != nil {
			a.received++
			if s == syscall.SIGQUIT && (a.received > 1 || os.Getenv("WEIR_TRACEBACK") != "") {
				writeStacks(a.stderr)
			}
			if a.received == 1 {
				again := "press Ctrl-C again to exit at once"
				if s == syscall.SIGQUIT {
					again = "send SIGQUIT again to print every goroutine's stack and exit at once"
				}
				fmt.Fprintf(a.stderr, "weir: %v: canceling (%s)\n", s, again)
				a.cancel()
			} else {
				fmt.Fprintln(a.stderr, "weir: exiting at once")
				exitNow(ExitCanceled)
			}
		}
		signals.mu.Unlock()
	}
}

// writeStacks writes the stacks of all goroutines to w.
func writeStacks(w io.Writer) {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= 64<<20 {
			w.Write(buf[:n])
			return
		}
		buf = make([]byte, 2*len(buf))
	}
}

// interruptible returns a context canceled by the first SIGINT, SIGTERM,
// SIGHUP or SIGQUIT; a second one exits the process at once with
// ExitCanceled. SIGHUP stays ignored when the process started with it
// ignored (nohup).
func interruptible(stderr io.Writer) (context.Context, func()) {
	signals.once.Do(func() {
		ch := make(chan os.Signal, 4)
		sigs := []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGQUIT}
		if !signal.Ignored(syscall.SIGHUP) {
			sigs = append(sigs, syscall.SIGHUP)
		}
		signal.Notify(ch, sigs...)
		go routeSignals(ch)
	})
	ctx, cancel := context.WithCancel(context.Background())
	signals.mu.Lock()
	signals.active = &session{cancel: cancel, stderr: stderr}
	signals.mu.Unlock()
	return ctx, func() {
		signals.mu.Lock()
		signals.active = nil
		signals.mu.Unlock()
		cancel()
	}
}

// jobFlags are the flags of `weir run`, shared by every job unless noted.
type jobFlags struct {
	parallelism      int
	maxParallelism   int // --max-parallelism; 0: derived (Config.MaxParallelism)
	restAddr         string
	bufferTimeout    time.Duration
	bufferSize       sizeFlag
	networkMemory    sizeFlag
	writeMemory      sizeFlag // --checkpoint-write-memory
	channelMemory    sizeFlag // --channel-state-memory
	batchMemory      sizeFlag // --batch-state-memory
	heapMemory       sizeFlag // --heap-state-memory
	processMemory    sizeFlag // --process-memory
	logLevel         string
	backend          string
	input, output    string
	rate             float64
	count            int64
	ooo              time.Duration
	checkpointDir    string
	savepointDir     string
	interval         time.Duration
	unaligned        bool
	incremental      bool
	from             string
	retained         int
	allowNonRestored bool
	// window-agg
	window, watermarks, lateOutput string
	lateness                       time.Duration
	// kafka-keyed-count
	brokers, inputTopic, outputTopic, group, guarantee, txnPrefix string
	bounded                                                       bool
	restart                                                       restartFlags   // restartflags.go
	bad                                                           badRecordFlags // restartflags.go
}

var commonRunFlags = []string{"parallelism", "max-parallelism", "address", "buffer-timeout", "buffer-size", "network-memory", "process-memory", "state-backend", "heap-state-memory", "log-level", "restart-strategy", "D", "jobmanager", "detached"}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run")
	var f jobFlags
	fs.IntVar(&f.parallelism, "parallelism", 1, "")
	fs.IntVar(&f.maxParallelism, "max-parallelism", 0, "")
	f.restAddr = rest.DefaultAddr
	fs.Var(optionalString{&f.restAddr}, "address", "") // "": no REST API
	alias(fs, "rest-address", "address")
	fs.DurationVar(&f.bufferTimeout, "buffer-timeout", 100*time.Millisecond, "")
	fs.Var(&f.bufferSize, "buffer-size", "")
	fs.Var(&f.networkMemory, "network-memory", "")
	fs.StringVar(&f.logLevel, "log-level", "warn", "")
	fs.StringVar(&f.backend, "state-backend", "hashmap", "")
	fs.StringVar(&f.input, "input", "", "")
	fs.StringVar(&f.output, "output", "", "")
	fs.Float64Var(&f.rate, "rate", 5, "")
	fs.Int64Var(&f.count, "count", 0, "")
	fs.DurationVar(&f.ooo, "max-out-of-orderness", 0, "")
	alias(fs, "out-of-orderness", "max-out-of-orderness")
	fs.StringVar(&f.checkpointDir, "checkpoint-dir", "", "")
	fs.StringVar(&f.savepointDir, "savepoint-dir", "", "")
	fs.DurationVar(&f.interval, "checkpoint-interval", time.Second, "")
	fs.BoolVar(&f.unaligned, "unaligned", false, "")
	fs.BoolVar(&f.incremental, "incremental", false, "")
	fs.StringVar(&f.from, "from", "", "")
	fs.IntVar(&f.retained, "retained", 1, "")
	fs.Var(&f.writeMemory, "checkpoint-write-memory", "")
	fs.Var(&f.channelMemory, "channel-state-memory", "")
	fs.Var(&f.batchMemory, "batch-state-memory", "")
	fs.Var(&f.heapMemory, "heap-state-memory", "")
	fs.Var(&f.processMemory, "process-memory", "")
	fs.BoolVar(&f.allowNonRestored, "allow-non-restored-state", false, "")
	fs.StringVar(&f.window, "window", "", "")
	fs.StringVar(&f.watermarks, "watermarks", "punctuated", "")
	fs.StringVar(&f.lateOutput, "late-output", "", "")
	fs.DurationVar(&f.lateness, "allowed-lateness", 0, "")
	fs.StringVar(&f.brokers, "brokers", "127.0.0.1:9092", "")
	fs.StringVar(&f.inputTopic, "input-topic", "", "")
	fs.StringVar(&f.outputTopic, "output-topic", "", "")
	fs.StringVar(&f.group, "group", "", "")
	fs.StringVar(&f.guarantee, "guarantee", "exactly-once", "")
	fs.StringVar(&f.txnPrefix, "transactional-id-prefix", "", "")
	fs.BoolVar(&f.bounded, "bounded", false, "")
	jobManager := fs.String("jobmanager", "", "")
	detached := fs.Bool("detached", false, "")
	f.restart.register(fs)
	f.bad.register(fs)
	pos, err := parseArgs(fs, splitDashD(args))
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("run needs exactly one job name (wordcount, clicks, fraud-detection, keyed-count, window-agg or kafka-keyed-count), got %d arguments", len(pos))
	}
	job := pos[0]
	switch job {
	case "wordcount":
		err = onlyFlags(fs, job, append(commonRunFlags, "input", "output", "batch-state-memory")...)
	case "clicks":
		// No checkpoints, but savepoints (taken into a staging directory).
		err = onlyFlags(fs, job, append(commonRunFlags, "rate", "count", "savepoint-dir", "from", "allow-non-restored-state")...)
		switch {
		case err != nil:
		case f.from == "latest":
			err = usagef("clicks takes no checkpoints, so --from latest has nothing to find: give the path of a savepoint (weir stop or weir savepoint print it)")
		case f.from == "" && setFlag(fs, "allow-non-restored-state"):
			err = usagef("--allow-non-restored-state needs --from")
		}
	case "fraud-detection":
		err = onlyFlags(fs, job, append(commonRunFlags, "input", "output", "max-out-of-orderness", "bad-records", "dead-letter")...)
		if err == nil && (f.input == "" || f.output == "") {
			err = usagef("fraud-detection needs --input and --output")
		}
	case "keyed-count", "window-agg", "kafka-keyed-count":
		flags := append(commonRunFlags, "checkpoint-dir", "checkpoint-interval", "unaligned", "incremental", "from", "retained", "savepoint-dir", "allow-non-restored-state", "checkpoint-write-memory", "channel-state-memory")
		switch job {
		case "window-agg":
			flags = append(flags, "input", "output", "rate", "window", "watermarks", "late-output", "max-out-of-orderness", "allowed-lateness", "bad-records", "dead-letter")
		case "keyed-count":
			flags = append(flags, "input", "output", "rate", "bad-records", "dead-letter")
		default:
			flags = append(flags, append(kafkaFlags, "bad-records", "dead-letter-topic")...)
		}
		err = onlyFlags(fs, job, flags...)
		if *jobManager != "" && f.checkpointDir == "" && f.guarantee != "none" {
			// The JobManager's --checkpoint-dir (state.checkpoints.dir)
			// is the job's there, and the JobManager checks the job again
			// with it (runOnCluster); f only serves these checks, the
			// arguments sent are args.
			f.checkpointDir = "(the JobManager's --checkpoint-dir)"
		}
		var kafkaErr error
		if err == nil && job == "kafka-keyed-count" {
			kafkaErr = f.checkKafka(fs)
		}
		switch {
		case err != nil:
		case kafkaErr != nil:
			err = kafkaErr
		case job == "keyed-count" && (f.input == "" || f.output == "" || f.checkpointDir == ""):
			err = usagef("keyed-count needs --input, --output and --checkpoint-dir (on a cluster, the JobManager's --checkpoint-dir serves)")
		case job == "window-agg" && (f.input == "" || f.output == "" || f.window == ""):
			err = usagef("window-agg needs --input, --output and --window")
		case f.checkpointDir == "" && setFlag(fs, "from"):
			err = usagef("--from needs --checkpoint-dir")
		case f.checkpointDir == "" && setFlag(fs, "savepoint-dir"):
			err = usagef("--savepoint-dir needs --checkpoint-dir on %s (of the built-in jobs, clicks takes it alone)", job)
		case f.incremental && f.backend != "pebble":
			err = usagef("--incremental needs --state-backend pebble (the heap backend writes whole snapshots)")
		case f.checkpointDir == "" && setFlag(fs, "incremental"):
			err = usagef("--incremental needs --checkpoint-dir")
		case f.from == "" && setFlag(fs, "allow-non-restored-state"):
			err = usagef("--allow-non-restored-state needs --from")
		case f.interval != 0 && f.interval < 10*time.Millisecond:
			err = usagef("--checkpoint-interval must be at least 10ms, or 0 for no periodic checkpoints (savepoints and the final checkpoint only), got %v", f.interval)
		case f.checkpointDir == "" && setFlag(fs, "checkpoint-write-memory"):
			err = usagef("--checkpoint-write-memory needs --checkpoint-dir")
		case f.checkpointDir == "" && setFlag(fs, "channel-state-memory"):
			err = usagef("--channel-state-memory needs --checkpoint-dir")
		case setFlag(fs, "channel-state-memory") && f.channelMemory.bytes < 64<<10:
			err = usagef("--channel-state-memory must be at least 64kb, got %d bytes", f.channelMemory.bytes)
		case setFlag(fs, "checkpoint-write-memory") && f.writeMemory.bytes < 5<<20:
			err = usagef("--checkpoint-write-memory must be at least 5mb (the buffers of one write to S3), got %d bytes", f.writeMemory.bytes)
		case f.retained < 1 || f.retained > 1000:
			err = usagef("--retained must be between 1 and 1000, got %d", f.retained)
		case f.rate < 0 || f.rate > 1e9 || f.rate != f.rate:
			err = usagef("--rate must be a number of lines per second from 0 (no limit) to 1e9, got %v", f.rate)
		}
		if !setFlag(fs, "rate") {
			f.rate = 0
		}
	default:
		return usagef("unknown job %q (built-in jobs: wordcount, clicks, fraud-detection, keyed-count, window-agg, kafka-keyed-count)", job)
	}
	if err != nil {
		return err
	}
	switch {
	case *detached && *jobManager == "":
		return usagef("--detached needs --jobmanager: a job on the embedded cluster ends with this command")
	case *jobManager != "" && setFlag(fs, "address"):
		return usagef("--address is the embedded cluster's REST API; a job submitted with --jobmanager is served by the JobManager's (weir jobmanager --rest-address)")
	}
	if setFlag(fs, "jobmanager") {
		if err := checkJobManagers(*jobManager); err != nil { // cluster.go
			return err
		}
	}
	if !launch.IsBuilding(ctx) { // a TaskManager builds what its JobManager checked
		if err := checkJobPaths(job, &f); err != nil { // paths.go
			return err
		}
	}
	cfg, err := f.config(fs, stderr)
	if err != nil {
		return err
	}
	if cfg.Restart, err = f.restart.config(f.checkpointDir != ""); err != nil {
		return err
	}
	if cfg.SlotRequestTimeout, err = f.restart.slotRequestTimeout(); err != nil {
		return err
	}
	var bad badrecords.Policy
	switch job {
	case "keyed-count", "window-agg", "fraud-detection":
		bad, err = f.bad.check(fs, "dead-letter", f.input, f.output)
	case "kafka-keyed-count":
		bad, err = f.bad.check(fs, "dead-letter-topic", f.inputTopic, f.outputTopic)
	}
	if err != nil {
		return err
	}
	if *jobManager != "" {
		sargs, err := submitArgs(fs, splitDashD(args))
		if err != nil {
			return err
		}
		return submit(ctx, *jobManager, job, sargs, *detached, stderr) // cluster.go
	}
	switch job {
	case "wordcount":
		return wordcount.Run(ctx, wordcount.Options{Input: f.input, Output: f.output, Parallelism: f.parallelism, Stdout: stdout, Config: cfg})
	case "fraud-detection":
		return frauddetection.Run(ctx, frauddetection.Options{Input: f.input, Output: f.output, Parallelism: f.parallelism,
			StateBackend: f.backend, MaxOutOfOrderness: f.ooo, Config: cfg, Stdout: stdout, BadRecords: bad, DeadLetter: f.bad.deadLetter})
	case "window-agg":
		return runWindowAgg(ctx, f, cfg, stderr, bad)
	case "kafka-keyed-count":
		return runKafkaKeyedCount(ctx, f, cfg, stderr, bad)
	case "keyed-count":
		f.checkpointing(&cfg, stderr)
		return keyedcount.Run(ctx, keyedcount.Options{Input: f.input, Output: f.output, RatePerSecond: f.rate, Config: cfg,
			BadRecords: bad, DeadLetter: f.bad.deadLetter})
	default: // clicks
		if f.rate <= 0 || f.rate > 1e9 || f.rate != f.rate {
			return usagef("--rate must be a number of clicks per second above 0 and at most 1e9, got %v", f.rate)
		}
		if f.count < 0 {
			return usagef("--count must be 0 (until canceled) or more, got %d", f.count)
		}
		cfg.SavepointDir, cfg.ResumeFrom, cfg.AllowNonRestoredState = f.savepointDir, f.from, f.allowNonRestored
		return clicks.Run(ctx, clicks.Options{RatePerSecond: f.rate, Count: f.count, Parallelism: f.parallelism, Config: cfg})
	}
}

// checkpointing turns on the checkpoints that the flags ask for, and says
// where the job starts from.
func (f *jobFlags) checkpointing(cfg *weir.Config, stderr io.Writer) {
	cfg.Checkpointing = &weir.CheckpointConfig{Interval: f.interval, Dir: f.checkpointDir, Unaligned: f.unaligned, Retained: f.retained,
		SavepointDir: f.savepointDir, Incremental: f.incremental, WriteMemory: f.writeMemory.bytes,
		ChannelStateMemory: f.channelMemory.bytes}
	cfg.ResumeFrom = f.from
	cfg.AllowNonRestoredState = f.allowNonRestored
	announceCheckpoints(cfg, stderr)
}

func setFlag(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// runWindowAgg validates window-agg's own flags and runs it: with
// --checkpoint-dir, exactly once into output directories.
func runWindowAgg(ctx context.Context, f jobFlags, cfg weir.Config, stderr io.Writer, bad badrecords.Policy) error {
	spec, err := windowagg.ParseSpec(f.window)
	if err != nil {
		return usagef("--window: %v", err)
	}
	if err := checkDuration("allowed-lateness", f.lateness); err != nil {
		return err
	}
	if f.watermarks != "punctuated" && f.watermarks != "periodic" {
		return usagef("--watermarks %q: want punctuated or periodic", f.watermarks)
	}
	if f.lateOutput != "" && f.lateOutput == f.output {
		return usagef("--late-output and --output are both %q; they must differ", f.output)
	}
	if f.lateOutput != "" && f.lateOutput == f.bad.deadLetter {
		return usagef("--late-output and --dead-letter are both %q; they must differ", f.lateOutput)
	}
	if f.checkpointDir != "" {
		f.checkpointing(&cfg, stderr)
	}
	return windowagg.Run(ctx, windowagg.Options{Input: f.input, Output: f.output, LateOutput: f.lateOutput, Window: spec,
		OutOfOrderness: f.ooo, AllowedLateness: f.lateness, Punctuated: f.watermarks == "punctuated",
		RatePerSecond: f.rate, Config: cfg, BadRecords: bad, DeadLetter: f.bad.deadLetter})
}

// announceCheckpoints makes the CLI say where a job starts from, when it
// restarts, and which checkpoints complete.
func announceCheckpoints(cfg *weir.Config, stderr io.Writer) {
	submit := cfg.OnSubmit
	from, dir := cfg.ResumeFrom, cfg.Checkpointing.Dir
	cfg.OnSubmit = func(j *weir.Job) {
		submit(j)
		switch r := j.RestoredFrom(); {
		case r != "":
			fmt.Fprintf(stderr, "weir: resuming from %s\n", r)
		case from == "latest":
			fmt.Fprintf(stderr, "weir: no complete checkpoint in %s; starting from the beginning\n", dir)
		}
	}
	cfg.OnCheckpoint = func(id int64, final bool) {
		if final {
			fmt.Fprintf(stderr, "weir: checkpoint %d complete (final: all output committed)\n", id)
		} else {
			fmt.Fprintf(stderr, "weir: checkpoint %d complete\n", id)
		}
	}
	cfg.OnRestart = func(attempt int, checkpoint int64, cause error) {
		if checkpoint > 0 {
			fmt.Fprintf(stderr, "weir: restarting (attempt %d) from checkpoint %d after: %v\n", attempt, checkpoint, cause)
		} else {
			fmt.Fprintf(stderr, "weir: restarting (attempt %d) from the beginning after: %v\n", attempt, cause)
		}
	}
}

// config validates the common flags and turns them into a configuration.
func (f *jobFlags) config(fs *flag.FlagSet, stderr io.Writer) (weir.Config, error) {
	if err := checkParallelism("parallelism", f.parallelism); err != nil {
		return weir.Config{}, err
	}
	if setFlag(fs, "max-parallelism") {
		if err := checkParallelism("max-parallelism", f.maxParallelism); err != nil {
			return weir.Config{}, err
		}
		if f.parallelism > f.maxParallelism {
			return weir.Config{}, usagef("--parallelism %d is above --max-parallelism %d (the number of key groups): raise --max-parallelism", f.parallelism, f.maxParallelism)
		}
	}
	if err := checkDuration("buffer-timeout", f.bufferTimeout); err != nil {
		return weir.Config{}, err
	}
	if err := checkDuration(typed(fs, "max-out-of-orderness"), f.ooo); err != nil {
		return weir.Config{}, err
	}
	level, err := logLevel(f.logLevel) // cluster.go
	if err != nil {
		return weir.Config{}, err
	}
	switch f.backend {
	case "hashmap", "pebble":
	default:
		return weir.Config{}, usagef("--%s %q: want hashmap or pebble", typed(fs, "state-backend"), f.backend)
	}
	given := map[string]bool{}
	for _, n := range setFlags(fs) {
		given[n] = true
	}
	if given["buffer-size"] && (f.bufferSize.bytes < 1<<10 || f.bufferSize.bytes > 64<<20) {
		return weir.Config{}, usagef("--buffer-size must be between 1kb and 64mb, got %d bytes", f.bufferSize.bytes)
	}
	if given["network-memory"] && f.networkMemory.bytes < 1<<20 {
		return weir.Config{}, usagef("--network-memory must be at least 1mb, got %d bytes", f.networkMemory.bytes)
	}
	if given["heap-state-memory"] && f.heapMemory.bytes < 1<<20 {
		return weir.Config{}, usagef("--heap-state-memory must be at least 1mb, got %d bytes", f.heapMemory.bytes)
	}
	if given["process-memory"] && f.processMemory.bytes < 32<<20 {
		return weir.Config{}, usagef("--process-memory must be at least 32mb (the Go runtime and a small job), got %d bytes", f.processMemory.bytes)
	}
	if given["batch-state-memory"] && f.batchMemory.bytes < 1<<20 {
		return weir.Config{}, usagef("--batch-state-memory must be at least 1mb, got %d bytes", f.batchMemory.bytes)
	}
	if given["address"] && f.restAddr != "" {
		a, err := listenAddress(typed(fs, "address"), f.restAddr)
		if err != nil {
			return weir.Config{}, err
		}
		f.restAddr = a
	}
	bt := f.bufferTimeout
	if bt == 0 {
		bt = time.Nanosecond // Config's 0 means the default; 1ns flushes after every batch
	}
	cfg := weir.Config{
		Parallelism: f.parallelism, MaxParallelism: f.maxParallelism, RESTAddr: f.restAddr, RESTPortFallback: !given["address"],
		BufferTimeout: bt, BufferSize: int(f.bufferSize.bytes), NetworkMemory: f.networkMemory.bytes, StateBackend: f.backend,
		BatchStateMemory: f.batchMemory.bytes, HeapStateMemory: f.heapMemory.bytes, ProcessMemory: f.processMemory.bytes,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	}
	cfg.OnSubmit = func(j *weir.Job) {
		msg := fmt.Sprintf("weir: job %s started", j.ID())
		if a := j.RESTAddr(); a != "" {
			msg += fmt.Sprintf("; REST API at http://%s", a)
		}
		fmt.Fprintln(stderr, msg)
	}
	return cfg, nil
}

// client parses the flags of a command that calls a cluster's REST API:
// --address (alias --rest-address) as HOST:PORT or the http://HOST:PORT
// weir run prints (clientURL), and the command's own flags in fs.
func client(fs *flag.FlagSet, args []string) (*rest.Client, []string, error) {
	addr := fs.String("address", rest.DefaultAddr, "")
	alias(fs, "rest-address", "address")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, nil, err
	}
	base, err := clientURL(typed(fs, "address"), *addr)
	if err != nil {
		return nil, nil, err
	}
	return rest.NewClient(base, nil), pos, nil
}

func list(ctx context.Context, args []string, stdout io.Writer) error {
	c, pos, err := client(newFlagSet("list"), args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("list takes no arguments, got %q", pos)
	}
	ctx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	jobs, err := c.JobsOverview(ctx)
	if err != nil {
		return err
	}
	if len(jobs) == 0 {
		fmt.Fprintln(stdout, "no jobs")
		return nil
	}
	fmt.Fprintf(stdout, "%-32s  %-10s  %-23s  %s\n", "ID", "STATE", "START", "NAME")
	for _, j := range jobs {
		start := time.UnixMilli(j.StartTime).Format("2006-01-02 15:04:05")
		fmt.Fprintf(stdout, "%-32s  %-10s  %-23s  %s\n", j.ID, j.State, start, j.Name)
	}
	return nil
}

func cancel(ctx context.Context, args []string, stdout io.Writer) error {
	c, pos, err := client(newFlagSet("cancel"), args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || !rest.ValidJobID(strings.TrimSpace(pos[0])) {
		return usagef("cancel needs one job ID (32 lowercase hex digits; see weir list)")
	}
	ctx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	if err := c.Cancel(ctx, strings.TrimSpace(pos[0])); err != nil {
		return unknownJob(err, strings.TrimSpace(pos[0]), "canceling job %s: %w")
	}
	fmt.Fprintf(stdout, "cancel requested for job %s\n", pos[0])
	return nil
}
