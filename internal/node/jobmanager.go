package node

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/weirhq/weir/internal/cluster"
	"github.com/weirhq/weir/internal/jobmanager"
	"github.com/weirhq/weir/internal/rpc"
)

// DefaultHeartbeatInterval and DefaultHeartbeatTimeout are
// heartbeat.interval and heartbeat.timeout between processes: Flink's
// names with defaults for Go, whose pauses are sub-millisecond (decision
// 11 of docs/distributed-runtime.md), where Flink's are 10 s and 50 s.
const (
	DefaultHeartbeatInterval = time.Second
	DefaultHeartbeatTimeout  = 5 * time.Second
)

// DefaultRPCAddress is where a JobManager's control plane listens by
// default: loopback and Flink's jobmanager.rpc.port.
const DefaultRPCAddress = "127.0.0.1:6123"

// RunJob runs a job submitted to a JobManager process (session mode) on
// its cluster c until the job ends. The binary gives it the job
// (launch.OnCluster); node does not import launch, which starts nodes in
// application mode. Canceling ctx cancels the job.
type RunJob func(ctx context.Context, c *cluster.Local, sub Submission) error

// Submission is a job RunJob runs (launch.Submission's fields).
type Submission struct {
	// Program names a job compiled into the binary and Args are its flags
	// (weir run's).
	Program string
	Args    []string
	// Submitted, if set, is called with the job's id once it is submitted.
	Submitted func(id string)
	// JobID, ResumeFrom and Fencing are set under high availability: the
	// job's id (kept when a new leader recovers it), the checkpoint it
	// resumes from ("": the program's own choice), and the leader's fence
	// of its checkpoints.
	JobID, ResumeFrom string
	Fencing           *jobmanager.Fencing
	// Parallelism, if set, replaces the job's default parallelism
	// (reactive mode: the cluster's slots).
	Parallelism int
	// Refresh, if set, gives the checkpoint a run of the job after the
	// first resumes from, and its fencing (high availability: from the
	// store); nil: "latest" of the checkpoint directory.
	Refresh func() (resumeFrom string, fencing *jobmanager.Fencing)
}

// JobManagerConfig configures a JobManager process.
type JobManagerConfig struct {
	// RPCAddress is where TaskManagers and clients reach it (host:port;
	// port 0 picks one; "" means DefaultRPCAddress).
	RPCAddress string
	// RESTAddress is the REST API's ("" for none).
	RESTAddress string
	// Run runs submitted jobs (session mode); nil refuses submissions (an
	// application's JobManager runs its own job only).
	Run RunJob
	// Outcome classifies a job's error for its client's exit code
	// (rpc.Jobs.Outcome); nil says "failed" for every error.
	Outcome func(error) string
	// Attach, if set, follows a job for a client that re-attaches
	// (rpc.Jobs.Attach; high availability).
	Attach func(ctx context.Context, id string) error
	// HeartbeatInterval and HeartbeatTimeout are heartbeat.interval and
	// heartbeat.timeout (0: DefaultHeartbeatInterval and
	// DefaultHeartbeatTimeout): a TaskManager silent for the timeout is
	// lost, and so is one whose session ends.
	HeartbeatInterval, HeartbeatTimeout time.Duration
	// Epoch is the leader epoch stamped on every control message (0: 1,
	// for a JobManager without high availability; a leader's term gives
	// its own, ha.Leadership.Epoch).
	Epoch uint64
	// Application, in application mode, describes the one job this
	// JobManager runs: TaskManagers ask for it (rpc.FollowApplication) and
	// must register with its digest.
	Application *rpc.Application
	Version     string
	Logger      *slog.Logger
}

// JobManager is a running JobManager process's server.
type JobManager struct {
	c   *cluster.Local
	srv *rpc.Server
	rpc string
	log *slog.Logger

	mu      sync.Mutex
	current map[string]string // TaskManager id -> its current session id
}

// StartJobManager starts the REST API and the control plane; it returns
// once both listen.
func StartJobManager(cfg JobManagerConfig) (*JobManager, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RPCAddress == "" {
		cfg.RPCAddress = DefaultRPCAddress
	}
	if cfg.Outcome == nil {
		cfg.Outcome = func(error) string { return "failed" }
	}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if cfg.HeartbeatTimeout == 0 {
		cfg.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	c, err := cluster.Start(cluster.Config{Remote: true, RESTAddr: cfg.RESTAddress, Version: cfg.Version, Logger: cfg.Logger,
		HeartbeatInterval: cfg.HeartbeatInterval, HeartbeatTimeout: cfg.HeartbeatTimeout})
	if err != nil {
		return nil, err
	}
	n := &JobManager{c: c, log: cfg.Logger, current: map[string]string{}}
	build := BuildID()
	sc := rpc.ServerConfig{
		Epoch:      cmp.Or(cfg.Epoch, leaderEpoch),
		JobManager: c.JM,
		Admit: func(reg rpc.Registration) error {
			if reg.BuildID != build {
				return fmt.Errorf("TaskManager %s runs build %s and the JobManager build %s: every process of a cluster must run the same binary",
					reg.ID, reg.BuildID, build)
			}
			switch app := cfg.Application; {
			case app == nil && reg.Application != "":
				return fmt.Errorf("TaskManager %s serves an application (digest %s), and this JobManager runs in session mode", reg.ID, reg.Application)
			case app != nil && reg.Application != app.Info.Digest:
				return fmt.Errorf("TaskManager %s built application digest %q and the JobManager %s (graph fingerprint and configuration): "+
					"the program must build its job from its arguments alone", reg.ID, reg.Application, app.Info.Digest)
			}
			return nil
		},
		Connected: func(reg rpc.Registration, ss *rpc.ServerSession) {
			n.mu.Lock()
			n.current[reg.ID] = ss.ID()
			n.mu.Unlock()
			c.JM.RegisterTaskManager(reg.TaskManagerRegistration, ss)
		},
		Ended: func(e rpc.SessionEnd) {
			n.mu.Lock()
			cur := n.current[e.TaskManager] == e.Session
			if cur {
				delete(n.current, e.TaskManager)
			}
			n.mu.Unlock()
			if !cur {
				return // replaced by a new registration, which lost it already
			}
			c.JM.TaskManagerSessionEnded(e.TaskManager, e.Cause.Error(), e.ByPeer)
		},
		Application: cfg.Application,
		Logger:      cfg.Logger,
	}
	if cfg.Run != nil {
		sc.Jobs = &rpc.Jobs{BuildID: build, RESTAddress: c.RESTAddr(), Outcome: cfg.Outcome, Attach: cfg.Attach,
			Run: func(ctx context.Context, program string, args []string, submitted func(string)) error {
				return cfg.Run(ctx, c, Submission{Program: program, Args: args, Submitted: submitted})
			}}
	}
	srv, err := rpc.NewServer(sc)
	if err != nil {
		c.Close(context.Background())
		return nil, err
	}
	addr, err := srv.Start(cfg.RPCAddress)
	if err != nil {
		c.Close(context.Background())
		return nil, fmt.Errorf("the JobManager's RPC listener on %s: %w", cfg.RPCAddress, err)
	}
	n.srv, n.rpc = srv, addr.String()
	cfg.Logger.Info("JobManager listening", "rpc", n.rpc, "rest", c.RESTAddr(), "build", build)
	return n, nil
}

// RPCAddress is where the control plane listens.
func (n *JobManager) RPCAddress() string { return n.rpc }

// RESTAddress is where the REST API listens, or "".
func (n *JobManager) RESTAddress() string { return n.c.RESTAddr() }

// Cluster is the JobManager's cluster (no TaskManagers of its own).
func (n *JobManager) Cluster() *cluster.Local { return n.c }

// Shutdown cancels every job, waits for them to end (until ctx ends), and
// stops listening: TaskManagers' sessions end after the cancellations.
func (n *JobManager) Shutdown(ctx context.Context) error {
	for _, id := range n.c.JM.JobIDs() {
		n.c.JM.Cancel(id)
	}
	for _, id := range n.c.JM.JobIDs() {
		select {
		case <-n.c.JM.Done(id):
		case <-ctx.Done():
		}
	}
	err := n.c.Close(ctx)
	if cerr := n.srv.Close(); err == nil {
		err = cerr
	}
	return err
}
