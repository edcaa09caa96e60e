package launch

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/node"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/rpc"
	"github.com/weirhq/weir/internal/taskmanager"
)

// Application mode (docs/distributed-runtime.md, decisions 3 and 4): a
// user's program runs as every process of its cluster. Config.Role says
// which this one is:
//   - RoleJobManager: Start starts a JobManager node here, submits the
//     job to it, and when the job has ended tells the TaskManagers and
//     shuts the node down, before Job.Done closes;
//   - RoleTaskManager: Start asks the JobManager for the application
//     (rpc.FollowApplication), re-executes this program with the
//     JobManager's arguments when its own differ (so the JobManager alone
//     supplies them), refuses to serve a job it built differently (graph
//     fingerprint, configuration), then serves as a TaskManager until the
//     application ends, whose outcome Job.Wait returns.
//
// The rule for programs: the code before Execute only builds the job, from
// the program's arguments alone; it runs in every process, and again after
// a re-execution.

// Roles of a process in application mode (Config.Role; "" is the embedded
// cluster).
const (
	RoleJobManager  = "jobmanager"
	RoleTaskManager = "taskmanager"
)

// Environment variables of application mode: the defaults of
// weir.Config.Role and JobManager, and a TaskManager's own settings, which
// cannot come from the program's arguments (every process gets the
// JobManager's).
const (
	EnvRole        = "WEIR_ROLE"
	EnvJobManager  = "WEIR_JOBMANAGER"
	EnvSlots       = "WEIR_TASKMANAGER_SLOTS"
	EnvID          = "WEIR_TASKMANAGER_ID"
	EnvDataAddress = "WEIR_TASKMANAGER_DATA_ADDRESS"
	EnvCPUCores    = "WEIR_TASKMANAGER_CPU_CORES"
	EnvHBInterval  = "WEIR_HEARTBEAT_INTERVAL"
	EnvHBTimeout   = "WEIR_HEARTBEAT_TIMEOUT"
	// envReexec marks a TaskManager re-executed with its JobManager's
	// arguments, so that it never re-executes twice.
	envReexec = "WEIR_APPLICATION_REEXEC"
)

// drainFollowers bounds how long an ended application's JobManager waits
// for its TaskManagers to hear of the end before it shuts down.
const drainFollowers = 2 * time.Second

// appSettings are the process settings of application mode from the
// environment.
type appSettings struct {
	slots                 int
	cores                 float64
	id, dataAddress       string
	hbInterval, hbTimeout time.Duration
}

func readAppSettings(getenv func(string) string) (appSettings, error) {
	s := appSettings{slots: 1, dataAddress: node.DefaultDataAddress, id: getenv(EnvID)}
	if v := getenv(EnvSlots); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1024 {
			return s, fmt.Errorf("%s=%q: want a number of slots from 1 to 1024", EnvSlots, v)
		}
		s.slots = n
	}
	if v := getenv(EnvDataAddress); v != "" {
		s.dataAddress = v
	}
	if v := getenv(EnvCPUCores); v != "" {
		c, err := strconv.ParseFloat(v, 64)
		if err == nil {
			err = node.CPUCores(c)
		}
		if err != nil {
			return s, fmt.Errorf("%s=%q: want a positive number of cores (taskmanager.cpu.cores; default: the slots)", EnvCPUCores, v)
		}
		s.cores = c
	}
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{{EnvHBInterval, &s.hbInterval}, {EnvHBTimeout, &s.hbTimeout}} {
		if v := getenv(d.name); v != "" {
			t, err := time.ParseDuration(v)
			if err != nil || t <= 0 {
				return s, fmt.Errorf("%s=%q: want a positive duration such as 1s", d.name, v)
			}
			*d.to = t
		}
	}
	return s, nil
}

// appInfo describes cfg's job as the application every process must build.
func appInfo(cfg Config, args []string) rpc.AppInfo {
	text := configText(cfg)
	sum := sha256.Sum256([]byte(cfg.Graph.Fingerprint + "\n" + text))
	return rpc.AppInfo{Name: cfg.Name, Args: args, Fingerprint: cfg.Graph.Fingerprint, Config: text, Digest: hex.EncodeToString(sum[:8])}
}

// perProcess are Config's fields each process sets for itself (memory,
// addresses, directories) or that are not values (callbacks, the logger,
// the clock, the graphs, which the fingerprint covers): configText leaves
// them out.
var perProcess = map[string]bool{"Graph": true, "Stream": true, "ProcessMemory": true, "MemoryFrom": true,
	"NetworkMemory": true, "HeapStateMemory": true, "TaskManagers": true, "SlotsPerTaskManager": true,
	"RESTAddr": true, "RESTPortFallback": true, "StateDir": true, "Logger": true, "Clock": true,
	"Role": true, "JobManager": true, "Canceled": true}

// configText is the canonical text of the job's configuration: one
// "Field=value" line per plain field of Config (nested structs as
// "Struct.Field", maps sorted by key), without perProcess and functions.
// Two processes that built the same job from the same arguments have the
// same text; it changes when a field is added, which is what it is for.
func configText(cfg Config) string {
	var b strings.Builder
	writeFields(&b, "", reflect.ValueOf(cfg))
	return b.String()
}

func writeFields(b *strings.Builder, prefix string, v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		if !f.IsExported() || (prefix == "" && perProcess[f.Name]) || f.Type.Kind() == reflect.Func {
			continue
		}
		name := prefix + f.Name
		switch f.Type.Kind() {
		case reflect.Pointer:
			if fv.IsNil() {
				fmt.Fprintf(b, "%s=nil\n", name)
			} else if fv.Elem().Kind() == reflect.Struct {
				writeFields(b, name+".", fv.Elem())
			} else {
				fmt.Fprintf(b, "%s=%v\n", name, fv.Elem().Interface())
			}
		case reflect.Map:
			keys := fv.MapKeys()
			sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
			for _, k := range keys {
				fmt.Fprintf(b, "%s[%v]=%v\n", name, k, fv.MapIndex(k))
			}
		case reflect.Struct:
			writeFields(b, name+".", fv)
		case reflect.Interface:
			// Not a plain value (a clock, an error): left out.
		default:
			fmt.Fprintf(b, "%s=%v\n", name, fv.Interface())
		}
	}
}

// firstDifference names the first line where two configuration texts
// differ.
func firstDifference(mine, theirs string) string {
	a, b := strings.Split(mine, "\n"), strings.Split(theirs, "\n")
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("here %q, the JobManager's %q", x, y)
		}
	}
	return "none"
}

// startApplication is Start in the JobManager role.
func startApplication(ctx context.Context, cfg Config) (*Job, error) {
	set, err := readAppSettings(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("weir: application mode: %w", err)
	}
	info := appInfo(cfg, os.Args[1:])
	hs, err := readHASettings(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("weir: application mode: %w", err)
	}
	if hs.Enabled() {
		return startHAApplication(ctx, cfg, set, info, hs) // application_ha.go
	}
	app := rpc.NewApplication(node.BuildID(), info)
	jm, err := node.StartJobManager(node.JobManagerConfig{RPCAddress: cfg.JobManager, RESTAddress: cfg.RESTAddr,
		HeartbeatInterval: set.hbInterval, HeartbeatTimeout: set.hbTimeout, Application: app, Version: Version, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("weir: starting the application's JobManager (Config.JobManager, %s): %w", EnvJobManager, err)
	}
	cfg.Logger.Info("application JobManager ready", "job", cfg.Name, "rpc", jm.RPCAddress(), "rest", jm.RESTAddress(),
		"fingerprint", info.Fingerprint, "digest", info.Digest)
	stop := func(end rpc.AppEnd) {
		app.Finish(end)
		app.Drain(drainFollowers)
		jm.Shutdown(context.Background())
	}
	var job *Job
	onSubmit, onEnd := cfg.OnSubmit, cfg.OnEnd
	cfg.OnSubmit = func(j *Job) {
		job = j
		if onSubmit != nil {
			onSubmit(j)
		}
	}
	cfg.OnEnd = func() {
		// Before Done closes: the process may exit once it has.
		stop(rpc.AppEnd{JobID: job.id, Status: string(job.status), Err: job.err})
		if onEnd != nil {
			onEnd()
		}
	}
	cfg.Role = ""
	j, err := Start(OnCluster(ctx, jm.Cluster(), Submission{Program: cfg.Name, Args: info.Args}), cfg)
	if err != nil {
		stop(rpc.AppEnd{Status: string(protocol.JobFailed), Err: err})
		return nil, err
	}
	return j, nil
}

// serveApplication is Start in the TaskManager role.
func serveApplication(ctx context.Context, cfg Config) (*Job, error) {
	set, err := readAppSettings(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("weir: application mode: %w", err)
	}
	if set.id == "" {
		host, _ := os.Hostname()
		set.id = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	follow, err := rpc.FollowApplication(ctx, cfg.JobManager, node.BuildID(), set.id, rpc.Backoff{Max: time.Second}, func(err error) {
		cfg.Logger.Warn("waiting for the application's JobManager", "jobmanager", cfg.JobManager, "err", err)
	})
	if err != nil {
		return nil, failure.Permanent(fmt.Errorf("weir: TaskManager %s of job %q: %w", set.id, cfg.Name, err))
	}
	args := os.Args[1:]
	if !slices.Equal(follow.Info.Args, args) {
		follow.Close()
		if os.Getenv(envReexec) != "" {
			return nil, failure.Permanent(fmt.Errorf("weir: TaskManager %s: re-executed with the JobManager's arguments %q, the program still sees %q",
				set.id, follow.Info.Args, args))
		}
		cfg.Logger.Info("re-executing with the application's arguments", "taskmanager", set.id, "args", follow.Info.Args)
		return nil, reexec(follow.Info.Args)
	}
	mine := appInfo(cfg, args)
	switch {
	case mine.Fingerprint != follow.Info.Fingerprint:
		follow.Close()
		return nil, failure.Permanent(fmt.Errorf("weir: TaskManager %s: the job built here (graph fingerprint %s) differs from the JobManager's (graph fingerprint %s) "+
			"from the same arguments: the program must build its job from its arguments alone", set.id, mine.Fingerprint, follow.Info.Fingerprint))
	case mine.Digest != follow.Info.Digest:
		follow.Close()
		return nil, failure.Permanent(fmt.Errorf("weir: TaskManager %s: the job's configuration here differs from the JobManager's (digest %s, the JobManager's %s; first difference: %s): "+
			"the program must configure its job from its arguments alone", set.id, mine.Digest, follow.Info.Digest, firstDifference(mine.Config, follow.Info.Config)))
	}
	build := cfg
	build.Role, build.OnSubmit, build.OnEnd = "", nil, nil
	serve, stop := context.WithCancel(ctx)
	j := &Job{started: time.Now(), done: make(chan struct{}), stop: stop}
	served := make(chan error, 1)
	go func() {
		served <- node.RunTaskManager(serve, node.TaskManagerConfig{JobManager: cfg.JobManager, ID: set.id, Slots: set.slots, CPUCores: set.cores,
			ProcessMemory: cfg.ProcessMemory, NetworkMemory: cfg.NetworkMemory, HeapStateMemory: cfg.HeapStateMemory,
			MemorySetting: "Config.ProcessMemory", MemoryFrom: cfg.MemoryFrom, DataAddress: set.dataAddress, StateDir: cfg.StateDir, Application: mine.Digest, Logger: cfg.Logger,
			HeartbeatInterval: set.hbInterval, HeartbeatTimeout: set.hbTimeout,
			Build: func(m protocol.RegisterJob, stateDir string) (*taskmanager.Job, error) {
				return BuildJob(m, func(ctx context.Context) error { _, err := Start(ctx, build); return err }, stateDir, cfg.Logger)
			}})
	}()
	go func() {
		j.id, j.status, j.err = followEnd(serve, follow, cfg, served)
		stop()
		if err := <-served; err != nil && j.err == nil {
			j.err = err
		}
		if cfg.OnEnd != nil {
			cfg.OnEnd()
		}
		close(j.done)
	}()
	if cfg.OnSubmit != nil {
		cfg.OnSubmit(j)
	}
	return j, nil
}

// followEnd waits for the application's end (or this TaskManager's:
// served, ctx). A JobManager that goes away without telling is asked again
// (it may be restarted with the same application); one that now runs
// another application, or none within the registration timeout, ends this
// TaskManager with an error.
func followEnd(ctx context.Context, follow *rpc.AppFollower, cfg Config, served chan error) (jobID string, _ protocol.JobState, _ error) {
	digest := follow.Info.Digest
	for {
		type result struct {
			end rpc.AppEnd
			err error
		}
		ended := make(chan result, 1)
		go func() { e, err := follow.End(); ended <- result{e, err} }()
		var r result
		select {
		case r = <-ended:
		case err := <-served:
			follow.Close()
			served <- err // for the caller
			if err == nil {
				return "", protocol.JobCanceled, ctx.Err()
			}
			return "", protocol.JobFailed, err
		}
		if e := r.end; r.err == nil {
			switch {
			case e.Status == string(protocol.JobCanceled):
				return e.JobID, protocol.JobCanceled, cfg.Canceled
			case e.Err != nil:
				return e.JobID, protocol.JobState(e.Status), e.Err
			}
			return e.JobID, protocol.JobState(e.Status), nil
		}
		cfg.Logger.Warn("lost the application's JobManager; asking again", "jobmanager", cfg.JobManager, "err", r.err)
		var err error
		if follow, err = rpc.FollowApplication(ctx, cfg.JobManager, node.BuildID(), "", rpc.Backoff{Max: time.Second}, nil); err != nil {
			if ctx.Err() != nil {
				return "", protocol.JobCanceled, ctx.Err()
			}
			return "", protocol.JobFailed, fmt.Errorf("weir: the application's JobManager at %s went away: %w", cfg.JobManager, err)
		}
		if follow.Info.Digest != digest {
			follow.Close()
			return "", protocol.JobFailed, failure.Permanent(fmt.Errorf("weir: the JobManager at %s now runs another application (digest %s, this TaskManager's %s)",
				cfg.JobManager, follow.Info.Digest, digest))
		}
	}
}

// reexec replaces this process with the same executable run with args
// (same PID), marked so that it does not do it again.
func reexec(args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("weir: re-executing with the application's arguments: %w", err)
	}
	env := append(os.Environ(), envReexec+"=1")
	err = syscall.Exec(exe, append([]string{os.Args[0]}, args...), env)
	return fmt.Errorf("weir: re-executing %s with the application's arguments: %w", exe, err)
}

// checkRole validates Config.Role.
func checkRole(role string) error {
	switch role {
	case "", RoleJobManager, RoleTaskManager:
		return nil
	}
	return errors.New("weir: Config.Role (" + EnvRole + ") is " + strconv.Quote(role) + ": want jobmanager, taskmanager, or empty for the embedded cluster")
}

// AdoptApplicationArgs makes a TaskManager of an application (WEIR_ROLE
// taskmanager) the program run with its JobManager's arguments before the
// program's own code runs: the root package calls it from init, so a
// main that checks its flags never sees a TaskManager's. It asks the
// JobManager (WEIR_JOBMANAGER) and re-executes the process with the
// arguments when they differ; it exits the process with status 1 when no
// JobManager answers (taskmanager.registration.timeout) or one refuses,
// and with 2 when a setting in the environment is wrong.
// Without the variable, or once re-executed, it does nothing.
func AdoptApplicationArgs() {
	if os.Getenv(EnvRole) != RoleTaskManager || os.Getenv(envReexec) != "" {
		return
	}
	if _, err := readAppSettings(os.Getenv); err != nil {
		fmt.Fprintf(os.Stderr, "weir: TaskManager (%s=%s): %v\n", EnvRole, RoleTaskManager, err)
		os.Exit(2)
	}
	addr := cmp.Or(os.Getenv(EnvJobManager), node.DefaultRPCAddress)
	follow, err := rpc.FollowApplication(context.Background(), addr, node.BuildID(), os.Getenv(EnvID), rpc.Backoff{Max: time.Second}, func(err error) {
		fmt.Fprintf(os.Stderr, "weir: TaskManager (%s=%s): waiting for the application's JobManager at %s (%s; retrying for up to 5 minutes): %v\n",
			EnvRole, RoleTaskManager, addr, EnvJobManager, err)
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "weir: TaskManager (%s=%s): %v\n", EnvRole, RoleTaskManager, err)
		os.Exit(1)
	}
	follow.Close()
	if slices.Equal(follow.Info.Args, os.Args[1:]) {
		return
	}
	err = reexec(follow.Info.Args)
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
