package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/jobmanager"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/taskmanager"
)

// Config configures a local cluster.
type Config struct {
	// TaskManagers is the number of TaskManagers (default 1).
	TaskManagers int
	// Remote: the TaskManagers run in other processes and register over
	// the network (the caller hands each to JM.RegisterTaskManager); the
	// cluster starts none of its own, and TaskManagers is ignored.
	Remote bool
	// SlotsPerTaskManager is the slots of each TaskManager (default 1).
	SlotsPerTaskManager int
	// NetworkMemory is each TaskManager's network memory budget in bytes
	// (default DefaultNetworkMemory).
	NetworkMemory int64
	// HeapStateMemory bounds each TaskManager's hashmap state tables in
	// bytes (0: unbounded; weir.Config gives the default).
	HeapStateMemory int64
	// RESTAddr is where the REST API listens ("" for no REST API;
	// "127.0.0.1:0" for any free port).
	RESTAddr string
	// RESTPortFallback: when RESTAddr's port is taken, listen on a free port
	// of the same host instead of failing.
	RESTPortFallback bool
	// Version is reported by the REST API.
	Version string
	Logger  *slog.Logger
	// HeartbeatInterval and HeartbeatTimeout are heartbeat.interval and
	// heartbeat.timeout between the JobManager and the TaskManagers (0:
	// DefaultHeartbeatInterval, and no timeout: decision 11 of
	// docs/distributed-runtime.md, a TaskManager in the JobManager's
	// process cannot be lost alone); HeartbeatClock times them (nil: the
	// system clock).
	HeartbeatInterval, HeartbeatTimeout time.Duration
	HeartbeatClock                      clock.Clock
}

// DefaultHeartbeatInterval is the embedded cluster's heartbeat.interval:
// the REST API's counters ride the heartbeats, as fresh as the tasks
// publish them (internal/task).
const DefaultHeartbeatInterval = 50 * time.Millisecond

// DefaultNetworkMemory is a TaskManager's network memory when none is
// configured. Buffers are allocated only as data flows, so this bounds memory
// without costing it; it is sized so that an all-to-all edge at parallelism
// 256 (65,536 channels, one 32 KiB buffer each at least) fits on one
// TaskManager, as the local cluster puts a whole job on one.
const DefaultNetworkMemory = 4 << 30

// Local is a running local cluster.
type Local struct {
	JM      *jobmanager.JobManager
	Shuffle *network.LocalShuffle
	// Jobs are the jobs this process built, which its TaskManagers run
	// (add a job before submitting it, remove it once it ended).
	Jobs   taskmanager.LocalJobs
	tms    []*taskmanager.TaskManager
	rest   *rest.Server
	logger *slog.Logger

	closeOnce sync.Once
}

// Start starts a local cluster.
func Start(cfg Config) (*Local, error) {
	switch {
	case cfg.Remote:
		cfg.TaskManagers = 0
	case cfg.TaskManagers < 1:
		cfg.TaskManagers = 1
	}
	if cfg.SlotsPerTaskManager < 1 {
		cfg.SlotsPerTaskManager = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.NetworkMemory <= 0 {
		cfg.NetworkMemory = DefaultNetworkMemory
	}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	jmTimeout, tmTimeout := cfg.HeartbeatTimeout, cfg.HeartbeatTimeout
	if cfg.HeartbeatTimeout <= 0 {
		jmTimeout, tmTimeout = jobmanager.NoTimeout, taskmanager.NoTimeout
	}
	c := &Local{JM: jobmanager.New(cfg.Logger), Shuffle: network.NewLocalShuffle(), logger: cfg.Logger}
	if err := c.JM.MonitorHeartbeats(jobmanager.HeartbeatConfig{Interval: cfg.HeartbeatInterval, Timeout: jmTimeout,
		Clock: cfg.HeartbeatClock}); err != nil {
		return nil, fmt.Errorf("the local cluster's heartbeats: %w", err)
	}
	// The JobManager and the TaskManagers reach each other only through the
	// loopback transport: every message between them is encoded and
	// decoded, as it will be between processes. Each TaskManager registers
	// (at once) and heartbeats from Start on.
	for i := range cfg.TaskManagers {
		var tm *taskmanager.TaskManager
		register := func() (uint64, string, error) {
			c.JM.RegisterTaskManager(protocol.LoopbackRegistration(tm.Registration()), protocol.NewLoopbackTaskManager(tm))
			return 0, "local", nil
		}
		tm = taskmanager.New(taskmanager.Config{ID: fmt.Sprintf("taskmanager-%d", i), Slots: cfg.SlotsPerTaskManager,
			NetworkMemory: cfg.NetworkMemory, HeapStateMemory: cfg.HeapStateMemory, Jobs: &c.Jobs, Logger: cfg.Logger,
			Heartbeats: taskmanager.Heartbeats{Interval: cfg.HeartbeatInterval, Timeout: tmTimeout, Clock: cfg.HeartbeatClock,
				Seed: uint64(i), Register: register}},
			protocol.NewLoopbackJobManager(c.JM), c.Shuffle)
		c.tms = append(c.tms, tm)
		if err := tm.Start(); err != nil {
			c.Close(context.Background())
			return nil, fmt.Errorf("the local cluster's heartbeats: %w", err)
		}
	}
	if cfg.RESTAddr != "" {
		c.rest = rest.NewServer(&view{c: c}, rest.WithVersion(cfg.Version, ""))
		addr, err := c.rest.Start(cfg.RESTAddr)
		if err != nil && errors.Is(err, syscall.EADDRINUSE) && cfg.RESTPortFallback {
			host, _, _ := net.SplitHostPort(cfg.RESTAddr)
			c.rest = rest.NewServer(&view{c: c}, rest.WithVersion(cfg.Version, ""))
			addr, err = c.rest.Start(net.JoinHostPort(host, "0"))
			if err == nil {
				cfg.Logger.Info("REST API port taken; listening on a free port", "wanted", cfg.RESTAddr, "address", addr)
			}
		}
		if err != nil {
			c.rest = nil
			c.Close(context.Background())
			if errors.Is(err, syscall.EADDRINUSE) {
				return nil, fmt.Errorf("the REST API cannot listen on %s: the address is in use (by another Weir job or another program); "+
					"choose another address (weir run --rest-address HOST:PORT, or \"\" for no REST API)", cfg.RESTAddr)
			}
			return nil, fmt.Errorf("starting the REST API on %s: %w", cfg.RESTAddr, err)
		}
		cfg.Logger.Info("REST API listening", "address", "http://"+addr)
	}
	return c, nil
}

// CrashTaskManager stops TaskManager id as a crash would (it sends nothing
// more, and its tasks end) and then tells the JobManager it is lost with
// cause, as a heartbeat timeout or a closed session will once TaskManagers
// are processes: its jobs restart on the TaskManagers left.
func (c *Local) CrashTaskManager(id string, cause error) error {
	i := slices.IndexFunc(c.tms, func(tm *taskmanager.TaskManager) bool { return tm.ID() == id })
	if i < 0 {
		return fmt.Errorf("the cluster has no TaskManager %q", id)
	}
	c.tms[i].Crash()
	c.JM.TaskManagerLost(id, cause, time.Time{}) // it has stopped: nothing to wait for
	return nil
}

// TaskError returns the Go error a failed execution returned, when it ran
// in this process (nil otherwise).
func (c *Local) TaskError(e protocol.ExecutionID) error {
	for _, tm := range c.tms {
		if err := tm.TaskError(e); err != nil {
			return err
		}
	}
	return nil
}

// RESTAddr is the address the REST API listens on, or "".
func (c *Local) RESTAddr() string {
	if c.rest == nil {
		return ""
	}
	return c.rest.Addr()
}

// Close cancels every job, waits for every task to return and stops the REST API.
func (c *Local) Close(ctx context.Context) error {
	var err error
	c.closeOnce.Do(func() {
		for _, id := range c.JM.JobIDs() {
			if cerr := c.JM.Cancel(id); cerr != nil && !errors.Is(cerr, jobmanager.ErrJobNotFound) {
				err = cerr
			}
		}
		for _, tm := range c.tms {
			tm.Shutdown()
		}
		c.JM.StopHeartbeats()
		if c.rest != nil {
			if serr := c.rest.Shutdown(ctx); serr != nil && err == nil {
				err = serr
			}
		}
	})
	return err
}
