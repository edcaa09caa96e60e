package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/cluster"
	"github.com/weirhq/weir/internal/launch"
	"github.com/weirhq/weir/internal/node"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/rpc"
	"github.com/weirhq/weir/internal/taskmanager"
)

// The commands of a multi-process cluster (docs/distributed-runtime.md,
// decisions 1 and 2): `weir jobmanager`, `weir taskmanager`, and `weir run
// <job> --jobmanager ADDR`, which submits a built-in job to a running
// JobManager. Every process runs the same binary and builds the job from
// its name and flags with run itself: the client checks the flags (and
// makes paths absolute), the JobManager runs run under launch.OnCluster
// (the job's checks and Execute, as on the embedded cluster), and each
// TaskManager under launch.Building (the graph only).

// runOnCluster is the node.RunJob of this binary's JobManager: the job's
// program under launch.OnCluster. Output goes to the process's own stdout
// and stderr (the JobManager's log).
//
// checkpointDir is the JobManager's --checkpoint-dir (Flink's
// state.checkpoints.dir): the checkpoint directory of a checkpointing job
// submitted without one.
func runOnCluster(stdout, stderr io.Writer, checkpointDir string) node.RunJob {
	return func(ctx context.Context, c *cluster.Local, sub node.Submission) error {
		args := withCheckpointDir(sub.Program, sub.Args, checkpointDir)
		if sub.Parallelism > 0 {
			args = withParallelism(args, sub.Parallelism)
		}
		ctx = launch.OnCluster(ctx, c, launch.Submission{Program: sub.Program, Args: args, Submitted: sub.Submitted,
			JobID: sub.JobID, ResumeFrom: sub.ResumeFrom, Fencing: sub.Fencing})
		return runProgram(ctx, sub.Program, args, stdout, stderr)
	}
}

// withParallelism replaces the --parallelism of args by p (reactive mode).
func withParallelism(args []string, p int) []string {
	out := make([]string, 0, len(args)+1)
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if name == "parallelism" && strings.HasPrefix(args[i], "-") {
			if !hasValue {
				i++ // its value
			}
			continue
		}
		out = append(out, args[i])
	}
	return append(out, fmt.Sprintf("--parallelism=%d", p))
}

// withCheckpointDir adds --checkpoint-dir=dir to the arguments of a
// checkpointing built-in job that has none (and does not run without
// checkpoints, --guarantee none).
func withCheckpointDir(program string, args []string, dir string) []string {
	if dir == "" || !slices.Contains([]string{"keyed-count", "window-agg", "kafka-keyed-count"}, program) {
		return args
	}
	for i, a := range args {
		name, value, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "checkpoint-dir" || name == "guarantee" && (value == "none" || value == "" && i+1 < len(args) && args[i+1] == "none") {
			return args
		}
	}
	return append(slices.Clip(args), "--checkpoint-dir="+dir)
}

// buildJob is TaskManagerConfig.Build of this binary's TaskManager: the
// job's program under launch.Building, silently.
func buildJob(logger *slog.Logger) func(protocol.RegisterJob, string) (*taskmanager.Job, error) {
	return func(m protocol.RegisterJob, stateDir string) (*taskmanager.Job, error) {
		return launch.BuildJob(m, func(ctx context.Context) error {
			return runProgram(ctx, m.Program, m.Args, io.Discard, io.Discard)
		}, stateDir, logger)
	}
}

// runProgram runs a program of this binary: run with the job's name and
// flags, or for "bench shuffle" and "bench latency" (`weir bench
// --jobmanager`), the benchmark's job.
func runProgram(ctx context.Context, job string, args []string, stdout, stderr io.Writer) error {
	if name, ok := isBenchProgram(job); ok {
		return benchProgram(ctx, name, args) // bench_cluster.go
	}
	return run(ctx, append([]string{job}, args...), stdout, stderr)
}

// outcome classifies run's error for the client's exit code.
func outcome(err error) string {
	var ue usageError
	switch {
	case errors.As(err, &ue):
		return "usage"
	case errors.Is(err, weir.ErrCanceled), errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "failed"
}

// checkJobManagers checks a --jobmanager value: HOST:PORT, or a comma
// list of them (every JobManager of a cluster with high availability).
func checkJobManagers(list string) error {
	addrs := rpc.Addresses(list)
	if len(addrs) == 0 {
		return usagef("--jobmanager %q names no JobManager: want HOST:PORT, or HOST:PORT,HOST:PORT with high availability", list)
	}
	for _, a := range addrs {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" || port == "0" {
			return usagef("--jobmanager %q: %q is not HOST:PORT (the JobManager's --rpc-address)", list, a)
		}
	}
	return nil
}

// heartbeatSettings reads the -D settings of jobmanager and taskmanager:
// heartbeat.interval and heartbeat.timeout (Flink's keys; durations), 0
// for the defaults. Both sides of a cluster should use the same values.
func heartbeatSettings(props propsFlag) (interval, timeout time.Duration, err error) {
	for _, p := range props {
		d, perr := time.ParseDuration(p[1])
		switch {
		case p[0] != "heartbeat.interval" && p[0] != "heartbeat.timeout":
			return 0, 0, usagef("-D %s: unknown setting (jobmanager and taskmanager take heartbeat.interval and heartbeat.timeout, taskmanager also %s and %s)", p[0], keyUserTimeout, node.KeyCPUCores)
		case perr != nil || d < 10*time.Millisecond:
			return 0, 0, usagef("-D %s=%s: want a duration of at least 10ms, such as 1s", p[0], p[1])
		case p[0] == "heartbeat.interval":
			interval = d
		default:
			timeout = d
		}
	}
	iv, to := cmpOr(interval, node.DefaultHeartbeatInterval), cmpOr(timeout, node.DefaultHeartbeatTimeout)
	if to <= iv {
		return 0, 0, usagef("heartbeat.timeout %v must be longer than heartbeat.interval %v", to, iv)
	}
	return interval, timeout, nil
}

// reactiveSettings takes jobmanager's -D scheduler-mode (default or
// reactive: Flink's) and
// jobmanager.adaptive-scheduler.resource-stabilization-timeout out of props.
func reactiveSettings(props propsFlag) (rest propsFlag, _ *node.ReactiveConfig, _ error) {
	var mode string
	var cfg node.ReactiveConfig
	for _, p := range props {
		switch p[0] {
		case "scheduler-mode":
			mode = p[1]
			if mode != "reactive" && mode != "default" {
				return nil, nil, usagef("-D scheduler-mode=%s: want reactive (jobs use every task slot and rescale when TaskManagers come and go) or default", mode)
			}
		case "jobmanager.adaptive-scheduler.resource-stabilization-timeout":
			d, err := time.ParseDuration(p[1])
			if err != nil || d < 0 {
				return nil, nil, usagef("-D %s=%s: want a duration such as 2s (how long a change of the task slots must last before a reactive job rescales)", p[0], p[1])
			}
			cfg.Stabilization = d
		default:
			rest = append(rest, p)
		}
	}
	if mode != "reactive" {
		if cfg.Stabilization != 0 {
			return nil, nil, usagef("-D jobmanager.adaptive-scheduler.resource-stabilization-timeout needs -D scheduler-mode=reactive")
		}
		return rest, nil, nil
	}
	return rest, &cfg, nil
}

// keyUserTimeout is taskmanager's -D setting of its data connections'
// TCP_USER_TIMEOUT (decision 23).
const keyUserTimeout = "taskmanager.network.tcp.user-timeout"

// userTimeoutSetting takes -D taskmanager.network.tcp.user-timeout out of
// props: a duration of at least 100ms (0 when not given: the default).
func userTimeoutSetting(props propsFlag) (rest propsFlag, timeout time.Duration, err error) {
	for _, p := range props {
		if p[0] != keyUserTimeout {
			rest = append(rest, p)
			continue
		}
		d, perr := time.ParseDuration(p[1])
		if perr != nil || d < 100*time.Millisecond {
			return nil, 0, usagef("-D %s=%s: want a duration of at least 100ms, such as 5s (how long sent data or keepalive probes may go unacknowledged before a data connection fails)", p[0], p[1])
		}
		timeout = d
	}
	return rest, timeout, nil
}

// cpuCoresSetting takes taskmanager's -D taskmanager.cpu.cores out of
// props (0 when not given: the slots).
func cpuCoresSetting(props propsFlag) (rest propsFlag, cores float64, err error) {
	for _, p := range props {
		if p[0] != node.KeyCPUCores {
			rest = append(rest, p)
			continue
		}
		v, perr := strconv.ParseFloat(p[1], 64)
		if perr == nil {
			perr = node.CPUCores(v)
		}
		if perr != nil {
			return nil, 0, usagef("-D %s=%s: want a positive number of cores (default: the number of slots)", p[0], p[1])
		}
		cores = v
	}
	return rest, cores, nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// logLevel parses --log-level.
func logLevel(s string) (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(s)); err != nil {
		return 0, usagef("--log-level %q: want debug, info, warn or error", s)
	}
	return level, nil
}

func jobManagerCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("jobmanager")
	rpcAddr := fs.String("rpc-address", node.DefaultRPCAddress, "")
	restAddr := rest.DefaultAddr
	fs.Var(optionalString{&restAddr}, "rest-address", "")
	level := fs.String("log-level", "info", "")
	cpuprofile := fs.String("cpuprofile", "", "")
	advertised := fs.String("advertised-address", "", "")
	checkpointDir := fs.String("checkpoint-dir", "", "")
	var props propsFlag
	fs.Var(&props, "D", "")
	pos, err := parseArgs(fs, splitDashD(args))
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("jobmanager takes no arguments, got %q", pos)
	}
	props, has, err := haSettings(props)
	if err != nil {
		return err
	}
	props, reactive, err := reactiveSettings(props)
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile("jobmanager", *cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	hbInterval, hbTimeout, err := heartbeatSettings(props)
	if err != nil {
		return err
	}
	lv, err := logLevel(*level)
	if err != nil {
		return err
	}
	if restAddr != "" {
		if restAddr, err = listenAddress("rest-address", restAddr); err != nil {
			return err
		}
	}
	if _, err := listenAddress("rpc-address", *rpcAddr); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	if *checkpointDir == "" {
		// Flink's high-availability.storageDir: with high availability,
		// the default home of what the store points to.
		*checkpointDir = has.StorageDir
	}
	if *checkpointDir != "" && isLocalPath("checkpoint-dir", *checkpointDir) {
		abs, err := filepath.Abs(*checkpointDir)
		if err != nil {
			return usagef("--checkpoint-dir %s: %v", *checkpointDir, err)
		}
		*checkpointDir = abs
	}
	jc := node.JobManagerConfig{RPCAddress: *rpcAddr, RESTAddress: restAddr, Run: runOnCluster(stdout, stderr, *checkpointDir),
		Outcome: outcome, HeartbeatInterval: hbInterval, HeartbeatTimeout: hbTimeout, Version: launch.Version, Logger: logger}
	if reactive != nil {
		jc.Run = node.Reactive(jc.Run, *reactive, logger)
	}
	if has.Enabled() {
		return contend(ctx, jc, has, *advertised, stdout, logger)
	}
	if *advertised != "" {
		return usagef("--advertised-address is what a leader publishes under high availability (-D high-availability.type=etcd|kubernetes)")
	}
	jm, err := node.StartJobManager(jc)
	if err != nil {
		return fmt.Errorf("%w (choose the addresses with --rpc-address and --rest-address)", err)
	}
	// The ready line: scripts and tests read the bound addresses here.
	fmt.Fprintf(stdout, "JobManager ready: rpc %s rest %s\n", jm.RPCAddress(), jm.RESTAddress())
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := jm.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutting the JobManager down: %w", err)
	}
	return nil
}

func taskManagerCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("taskmanager")
	jmAddr := fs.String("jobmanager", "", "")
	slots := fs.Int("slots", 1, "")
	id := fs.String("id", "", "")
	stateDir := fs.String("state-dir", "", "")
	dataAddr := fs.String("data-address", node.DefaultDataAddress, "")
	advertised := fs.String("advertised-data-address", "", "")
	level := fs.String("log-level", "info", "")
	cpuprofile := fs.String("cpuprofile", "", "")
	var netMem, heapMem, procMem sizeFlag
	fs.Var(&procMem, "process-memory", "")
	fs.Var(&netMem, "network-memory", "")
	fs.Var(&heapMem, "heap-state-memory", "")
	var props propsFlag
	fs.Var(&props, "D", "")
	pos, err := parseArgs(fs, splitDashD(args))
	if err != nil {
		return err
	}
	props, userTimeout, err := userTimeoutSetting(props)
	if err != nil {
		return err
	}
	props, cores, err := cpuCoresSetting(props)
	if err != nil {
		return err
	}
	hbInterval, hbTimeout, err := heartbeatSettings(props)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 0:
		return usagef("taskmanager takes no arguments, got %q", pos)
	case *jmAddr == "":
		return usagef("taskmanager needs --jobmanager HOST:PORT (the JobManager's --rpc-address)")
	case checkJobManagers(*jmAddr) != nil:
		return checkJobManagers(*jmAddr)
	case *slots < 1 || *slots > 1024:
		return usagef("--slots must be between 1 and 1024, got %d", *slots)
	case setFlag(fs, "network-memory") && netMem.bytes < 1<<20:
		return usagef("--network-memory must be at least 1mb, got %d bytes", netMem.bytes)
	case setFlag(fs, "heap-state-memory") && heapMem.bytes < 1<<20:
		return usagef("--heap-state-memory must be at least 1mb, got %d bytes", heapMem.bytes)
	case setFlag(fs, "process-memory") && procMem.bytes < 32<<20:
		return usagef("--process-memory must be at least 32mb (the Go runtime and a small job), got %d bytes", procMem.bytes)
	}
	lv, err := logLevel(*level)
	if err != nil {
		return err
	}
	if err := checkAddress("data-address", *dataAddr); err != nil {
		return err
	}
	if *advertised != "" {
		if host, port, err := net.SplitHostPort(*advertised); err != nil || host == "" || port == "" || port == "0" {
			return usagef("--advertised-data-address %q: want the host:port other TaskManagers dial (no port 0, no empty host)", *advertised)
		}
	}
	stopProfile, err := startCPUProfile("taskmanager", *cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	return node.RunTaskManager(ctx, node.TaskManagerConfig{JobManager: *jmAddr, ID: *id, Slots: *slots, CPUCores: cores, ProcessMemory: procMem.bytes, NetworkMemory: netMem.bytes,
		HeapStateMemory: heapMem.bytes, StateDir: *stateDir, DataAddress: *dataAddr, AdvertisedDataAddress: *advertised, Build: buildJob(logger), Logger: logger,
		HeartbeatInterval: hbInterval, HeartbeatTimeout: hbTimeout, DataUserTimeout: userTimeout,
		Registered: func(session string) {
			fmt.Fprintf(stdout, "TaskManager registered with %s (session %s)\n", *jmAddr, session)
		}})
}

// clientOnlyFlags are run's flags that concern the submitting client and
// are not sent to the JobManager.
var clientOnlyFlags = []string{"jobmanager", "detached"}

// pathFlags are run's flags that name local paths: the client sends them
// absolute, since the JobManager and TaskManagers run elsewhere.
var pathFlags = []string{"input", "output", "late-output", "dead-letter", "checkpoint-dir", "savepoint-dir", "from"}

// submitArgs are the flags the JobManager receives for a job submitted
// with args (run's, parsed into fs already): the job's name (run's one
// positional argument, sent apart) and client-only flags dropped, and
// path values made absolute.
func submitArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break // only the job's name may follow
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue // the job's name
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		isBool := false
		if fl := fs.Lookup(name); fl != nil {
			if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok {
				isBool = b.IsBoolFlag()
			}
		}
		if !hasValue && !isBool && i+1 < len(args) {
			i++
			value, hasValue = args[i], true
		}
		switch {
		case slices.Contains(clientOnlyFlags, name):
			continue
		case slices.Contains(pathFlags, name) && hasValue && isLocalPath(name, value):
			abs, err := filepath.Abs(value)
			if err != nil {
				return nil, fmt.Errorf("--%s %s: %w", name, value, err)
			}
			value = abs
		}
		if hasValue {
			out = append(out, "--"+name+"="+value)
		} else {
			out = append(out, "--"+name)
		}
	}
	return out, nil
}

// isLocalPath reports whether flag's value is a path on this machine (not
// standard output, a URL, or --from latest).
func isLocalPath(flag, v string) bool {
	return v != "" && v != "-" && !strings.Contains(v, "://") && !(flag == "from" && v == "latest")
}

// submit sends job with args to the JobManager at addr and, unless
// detached, follows it to its end; it returns what run would return for
// the job on the embedded cluster.
func submit(ctx context.Context, addr, job string, args []string, detached bool, stderr io.Writer) error {
	s, err := rpc.SubmitJob(ctx, addr, node.BuildID(), job, args, detached, func(s rpc.Submission) {
		if s.Lost != "" {
			fmt.Fprintf(stderr, "weir: lost the JobManager at %s while job %s runs; following the job at the next leader of %s\n", s.Lost, s.JobID, addr)
			return
		}
		fmt.Fprintf(stderr, "weir: job %s submitted to %s", s.JobID, addr)
		if s.RESTAddress != "" {
			fmt.Fprintf(stderr, " (REST API http://%s)", s.RESTAddress)
		}
		fmt.Fprintln(stderr)
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	switch {
	case s.Err == nil:
		return nil
	case s.Outcome == "usage":
		return usageError{s.Err.Error()}
	case s.Outcome == "canceled":
		return weir.ErrCanceled
	}
	return s.Err
}
