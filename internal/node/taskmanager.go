package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/rpc"
	"github.com/weirhq/weir/internal/scratch"
	"github.com/weirhq/weir/internal/taskmanager"
)

// TaskManagerConfig configures a TaskManager process.
type TaskManagerConfig struct {
	// JobManager is the JobManager's RPC address (required).
	JobManager string
	// ID is its stable id (Flink's taskmanager.resource-id); "" means
	// <hostname>:<pid>.
	ID    string
	Slots int
	// CPUCores is taskmanager.cpu.cores: the process's GOMAXPROCS (0: the
	// slots; cpu.go).
	CPUCores float64
	// ProcessMemory is the memory the whole process may use (0: the
	// cgroup's limit, else the machine's memory); NetworkMemory and
	// HeapStateMemory (see taskmanager.Config) default to their shares of
	// it, and the live heap is guarded against it (memory.go).
	ProcessMemory, NetworkMemory, HeapStateMemory int64
	// MemorySetting names the setting of ProcessMemory in errors ("":
	// --process-memory), MemoryFrom where its value came from ("": that
	// setting), for the log.
	MemorySetting, MemoryFrom string
	// DataAddress is where its data plane listens for other TaskManagers
	// (host:port; "" means DefaultDataAddress). With an unspecified host
	// it advertises the local address of its connection to the JobManager.
	DataAddress string
	// AdvertisedDataAddress, if set, is the address other TaskManagers
	// dial for this one's data plane instead of the one derived from
	// DataAddress (behind NAT, a port forward or a proxy).
	AdvertisedDataAddress string
	// DataUserTimeout is the data connections' TCP_USER_TIMEOUT,
	// taskmanager.network.tcp.user-timeout (0: tcp.DefaultUserTimeout).
	DataUserTimeout time.Duration
	// StateDir holds its jobs' on-disk state, a folder per job ("" means
	// a new temporary directory, removed at the end).
	StateDir string
	// Build builds, in this process, a job the JobManager registers with
	// it (required): the binary runs the job's program under
	// launch.Building (launch.BuildJob); stateDir is the folder for the
	// TaskManager's on-disk state (StateDir, or the temporary one).
	Build func(m protocol.RegisterJob, stateDir string) (*taskmanager.Job, error)
	// Application is, in application mode, the digest of the application
	// this process built (rpc.AppInfo.Digest), which it registers with.
	Application string
	// Backoff paces registration (rpc.Backoff's defaults when zero).
	Backoff rpc.Backoff
	// HeartbeatInterval and HeartbeatTimeout are heartbeat.interval and
	// heartbeat.timeout (0: DefaultHeartbeatInterval and
	// DefaultHeartbeatTimeout): with no reply to its heartbeats for the
	// timeout, the TaskManager fences itself and registers again.
	HeartbeatInterval, HeartbeatTimeout time.Duration
	Logger                              *slog.Logger
	// Registered, if set, is called each time a session opens.
	Registered func(session string)
}

// RunTaskManager registers with the JobManager and runs what it is sent
// until ctx ends (then it closes its session, which deregisters it, and
// returns nil once every execution has returned) or registration fails
// for good (refused, or not admitted within the registration timeout).
// Each session gets a fresh taskmanager.TaskManager: when a session ends,
// everything the old one ran is canceled and has returned before the
// process registers again (the TaskManager fences itself, decision 13).
func RunTaskManager(ctx context.Context, cfg TaskManagerConfig) error {
	if cfg.Build == nil || len(rpc.Addresses(cfg.JobManager)) == 0 {
		return errors.New("node: TaskManagerConfig needs JobManager and Build")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if cfg.HeartbeatTimeout == 0 {
		cfg.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if cfg.Slots < 1 {
		cfg.Slots = 1
	}
	applyCPUCores(cfg.CPUCores, cfg.Slots, cfg.Logger)
	guard, err := processMemory(&cfg, cfg.Logger)
	if err != nil {
		return err
	}
	// The guard ends the process's work when the live heap outgrows its
	// bound: its sessions end, and its jobs restart elsewhere.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopGuard := guard(func(err error) {
		cfg.Logger.Error("memory guard: stopping the TaskManager", "taskmanager", cfg.ID, "err", err)
		cancel(err)
	})
	defer stopGuard()
	if cfg.ID == "" {
		host, _ := os.Hostname()
		cfg.ID = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if cfg.StateDir == "" {
		// Locked while this process lives, so the next TaskManager on this
		// machine removes it if this one is killed (kill -9 runs no defer).
		dir, release, err := scratch.Dir("weir-taskmanager-", "")
		if err != nil {
			return fmt.Errorf("creating the TaskManager's state directory: %w", err)
		}
		defer release()
		cfg.StateDir = dir
	} else if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return fmt.Errorf("the TaskManager's state directory (--state-dir): %w", err)
	}
	build := BuildID()
	if cfg.DataAddress == "" {
		cfg.DataAddress = DefaultDataAddress
	}
	dp, err := startDataPlane(ctx, cfg, build)
	if err != nil {
		if ctx.Err() != nil {
			return ended(ctx, cfg.ID)
		}
		return fmt.Errorf("TaskManager %s: %w", cfg.ID, err)
	}
	defer dp.close() // after the last session's TaskManager shut down
	for {
		gw := &toJobManager{}
		// The heartbeat's Member registers through this: the first time
		// with the session opened below; when it fences itself (no reply
		// for heartbeat.timeout) it asks again, and closing the session
		// makes this loop cancel everything and register anew.
		var session atomic.Pointer[rpc.ClientSession]
		registered := false
		register := func() (uint64, string, error) {
			cs := session.Load()
			if registered {
				cs.Close()
				return 0, "", errors.New("the TaskManager fenced itself: it registers again with a new session")
			}
			registered = true
			return cs.Fence().Epoch, cs.Fence().Session, nil
		}
		tm := taskmanager.New(taskmanager.Config{ID: cfg.ID, Slots: cfg.Slots, NetworkMemory: cfg.NetworkMemory,
			HeapStateMemory: cfg.HeapStateMemory, Jobs: &builder{cfg: cfg}, Logger: cfg.Logger, Data: dp.forTaskManager(),
			Heartbeats: taskmanager.Heartbeats{Interval: cfg.HeartbeatInterval, Timeout: cfg.HeartbeatTimeout, Register: register}},
			gw, network.NewLocalShuffle())
		cs, err := rpc.Connect(ctx, rpc.ClientConfig{JobManager: cfg.JobManager,
			Registration: rpc.Registration{TaskManagerRegistration: tm.Registration(), DataAddress: dp.addr, BuildID: build, Application: cfg.Application},
			TaskManager:  tm, Backoff: cfg.Backoff, Logger: cfg.Logger})
		if err != nil {
			tm.Shutdown()
			if ctx.Err() != nil {
				return ended(ctx, cfg.ID)
			}
			return fmt.Errorf("TaskManager %s: %w", cfg.ID, err)
		}
		gw.cs.Store(cs)
		session.Store(cs)
		if err := tm.Start(); err != nil {
			cs.Close()
			tm.Shutdown()
			return fmt.Errorf("TaskManager %s: %w", cfg.ID, err)
		}
		cfg.Logger.Info("TaskManager registered", "taskmanager", cfg.ID, "jobmanager", cfg.JobManager, "session", cs.Fence().Session, "slots", cfg.Slots, "data", dp.addr)
		if cfg.Registered != nil {
			cfg.Registered(cs.Fence().Session)
		}
		select {
		case <-cs.Done():
			end, _ := cs.End()
			cfg.Logger.Warn("TaskManager's session ended: canceling everything it runs, then registering again",
				"taskmanager", cfg.ID, "cause", end.Cause)
			tm.Shutdown()
		case <-ctx.Done():
			// Deregister at once (the JobManager sees the session closed
			// by its peer), then stop what runs here.
			cs.Close()
			tm.Shutdown()
			return ended(ctx, cfg.ID)
		}
		if ctx.Err() != nil {
			return ended(ctx, cfg.ID)
		}
	}
}

// taskmanagerNetworkMemory is a TaskManager process's network memory when
// none is configured (cluster.DefaultNetworkMemory's reasoning: buffers are
// allocated as data flows).
const taskmanagerNetworkMemory = 1 << 30

// toJobManager is a TaskManager's gateway to the JobManager through its
// current session: the TaskManager is made before the session that
// delivers to it, and sends nothing before it has a job.
type toJobManager struct {
	cs atomic.Pointer[rpc.ClientSession]
}

func (g *toJobManager) session() protocol.JobManagerGateway {
	if cs := g.cs.Load(); cs != nil {
		return cs
	}
	return dropped{}
}

func (g *toJobManager) UpdateTaskState(u protocol.TaskStateUpdate) { g.session().UpdateTaskState(u) }
func (g *toJobManager) AcknowledgeCheckpoint(a protocol.AcknowledgeCheckpoint) {
	g.session().AcknowledgeCheckpoint(a)
}
func (g *toJobManager) DeclineCheckpoint(d protocol.DeclineCheckpoint) {
	g.session().DeclineCheckpoint(d)
}
func (g *toJobManager) SendEvent(e protocol.OperatorEvent)         { g.session().SendEvent(e) }
func (g *toJobManager) SourceEnded(s protocol.SourceEnded)         { g.session().SourceEnded(s) }
func (g *toJobManager) ReportTaskStats(r protocol.TaskStatsReport) { g.session().ReportTaskStats(r) }
func (g *toJobManager) Heartbeat(h protocol.Heartbeat)             { g.session().Heartbeat(h) }
func (g *toJobManager) Deregister(d protocol.Deregister)           { g.session().Deregister(d) }

// dropped is the gateway before a session opened: nothing can be running.
type dropped struct{}

func (dropped) UpdateTaskState(protocol.TaskStateUpdate)             {}
func (dropped) AcknowledgeCheckpoint(protocol.AcknowledgeCheckpoint) {}
func (dropped) DeclineCheckpoint(protocol.DeclineCheckpoint)         {}
func (dropped) SendEvent(protocol.OperatorEvent)                     {}
func (dropped) SourceEnded(protocol.SourceEnded)                     {}
func (dropped) ReportTaskStats(protocol.TaskStatsReport)             {}
func (dropped) Heartbeat(protocol.Heartbeat)                         {}
func (dropped) Deregister(protocol.Deregister)                       {}

// builder builds a TaskManager process's jobs with TaskManagerConfig.Build.
type builder struct{ cfg TaskManagerConfig }

func (b *builder) BuildJob(m protocol.RegisterJob) (*taskmanager.Job, error) {
	if m.Program == "" {
		return nil, fmt.Errorf("job %s was built by a program that runs only in its JobManager's process (an embedded job); TaskManager processes build jobs compiled into the binary", m.JobID)
	}
	return b.cfg.Build(m, b.cfg.StateDir)
}

// ended is what RunTaskManager returns once ctx ended: nil when it was
// canceled (a signal), the memory guard's error when that stopped it.
func ended(ctx context.Context, id string) error {
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return fmt.Errorf("TaskManager %s: %w", id, c)
	}
	return nil
}
