package taskmanager

import (
	"context"
	"fmt"
	"sync"

	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/network/tcp"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/task"
)

// DataPlane connects a TaskManager's channels with those of TaskManagers
// in other processes over internal/network/tcp (docs/distributed-runtime.md,
// decisions 15-20). Without one every channel is local: the TaskManagers
// of the embedded cluster share one shuffle and never open a socket.
type DataPlane struct {
	// Address is where Server accepts connections, as other TaskManagers
	// dial it (its registration's DataAddress).
	Address string
	// Server is the process's producer side: the TaskManager publishes
	// there each result partition with a consumer in another TaskManager,
	// and releases them with their attempts. The process owns it (one
	// listener outlives the TaskManagers of its successive sessions).
	Server *tcp.Server
	// Dialer and Client are the consumer side's connections and settings
	// (identity, timeouts, socket options). The TaskManager owns its
	// tcp.Clients: one per network setting of its jobs (buffer size and
	// buffers per channel, each job's own), in practice one, whose remote
	// channels take their buffers from its network memory; Shutdown
	// closes them.
	Dialer tcp.Dialer
	Client tcp.Config
}

// dataState is a TaskManager's side of its data plane.
type dataState struct {
	cfg DataPlane

	mu      sync.Mutex // guards clients, placed, jobs, closed
	clients map[[2]int]*tcp.Client
	// placed is, by job, the newest attempt's slot placement
	// (DeployAttempt).
	placed map[string]protocol.DeployAttempt
	// jobs are those with partitions published on the Server, released
	// there at Shutdown (the Server outlives this TaskManager).
	jobs   map[string]bool
	closed bool
}

func newDataState(cfg *DataPlane) *dataState {
	if cfg == nil {
		return nil
	}
	return &dataState{cfg: *cfg, clients: map[[2]int]*tcp.Client{}, placed: map[string]protocol.DeployAttempt{}, jobs: map[string]bool{}}
}

// DeployAttempt implements protocol.TaskManagerGateway: it keeps where each
// job slot of the attempt runs, for the attempt's deployments here, and
// starts connecting to the TaskManagers that run its other slots.
func (tm *TaskManager) DeployAttempt(a protocol.DeployAttempt) {
	ds := tm.data
	if ds == nil {
		tm.logger.Warn("placement ignored: this TaskManager has no data plane", "taskmanager", tm.id, "job", a.JobID, "attempt", a.Attempt)
		return
	}
	ds.mu.Lock()
	if old, ok := ds.placed[a.JobID]; ok && old.Attempt > a.Attempt {
		ds.mu.Unlock()
		return
	}
	ds.placed[a.JobID] = a
	ds.mu.Unlock()
	tm.mu.Lock()
	job := tm.jobs[a.JobID]
	tm.mu.Unlock()
	if job == nil {
		return
	}
	// Dial the peers now, so that the deployments that follow find their
	// connections (a deployment waits for its dial on the control path).
	seen := map[string]bool{tm.id: true}
	for _, p := range a.Slots {
		if seen[p.TaskManager] {
			continue
		}
		seen[p.TaskManager] = true
		cl, err := tm.client(job)
		if err != nil {
			return
		}
		go cl.Conn(context.Background(), tcp.Peer{ID: p.TaskManager, Addr: p.DataAddress})
	}
}

// placement returns where the job slots of d's attempt run, or nil when
// every channel of d is local (no data plane).
func (tm *TaskManager) placement(job *Job, d protocol.Deployment) ([]protocol.SlotPlacement, error) {
	ds := tm.data
	if ds == nil {
		return nil, nil
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	a, ok := ds.placed[d.Exec.Job]
	if !ok || a.Attempt != d.Exec.Attempt {
		return nil, fmt.Errorf("taskmanager %s: %s: the JobManager did not say where the job slots of attempt %d run (DeployAttempt) before deploying it",
			tm.id, d.Exec, d.Exec.Attempt)
	}
	need := 0
	for _, v := range job.Graph.Vertices {
		need = max(need, v.Parallelism)
	}
	if len(a.Slots) < need {
		return nil, fmt.Errorf("taskmanager %s: %s: the JobManager placed %d job slots of attempt %d, the job needs %d", tm.id, d.Exec, len(a.Slots), d.Exec.Attempt, need)
	}
	return a.Slots, nil
}

// client returns the consumer side for job's network settings.
func (tm *TaskManager) client(job *Job) (*tcp.Client, error) {
	ds := tm.data
	k := [2]int{job.BufferSize, job.BuffersPerChannel}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.closed {
		return nil, fmt.Errorf("taskmanager %s is shut down", tm.id)
	}
	cl := ds.clients[k]
	if cl == nil {
		cfg := ds.cfg.Client
		cfg.BufferSize, cfg.BuffersPerChannel, cfg.Budget = job.BufferSize, job.BuffersPerChannel, tm.budget
		cl = tcp.NewClient(cfg, ds.cfg.Dialer)
		ds.clients[k] = cl
	}
	return cl, nil
}

// publish makes rp, the partition of key that d produces on edge e,
// available on the data plane when a consumer of it runs in another
// TaskManager; a failure of such a consumer fails d's task (w).
func (tm *TaskManager) publish(w *wiring, place []protocol.SlotPlacement, e *graph.JobEdge, key network.PartitionKey, rp *network.ResultPartition) error {
	if place == nil {
		return nil
	}
	lo, hi := graph.Targets(e.Pattern, e.Source.Parallelism, e.Target.Parallelism, key.Producer)
	remote := false
	for c := lo; c < hi; c++ {
		remote = remote || place[c].TaskManager != tm.id
	}
	if !remote {
		return nil
	}
	ds := tm.data
	ds.mu.Lock()
	ds.jobs[key.Job] = true
	ds.mu.Unlock()
	return ds.cfg.Server.Publish(key, rp, func(sub int, err error) {
		w.fail(fmt.Errorf("the data plane: the consumer of the output of %q to %q, subtask %d, failed: %w",
			e.Source.Name, e.Target.Name, lo+sub+1, err))
	})
}

// connect adds to gate the input channel from subpartition sub of the
// partition of key (n subpartitions): local through the shuffle when its
// producer runs here, else requested from the producer's TaskManager. A
// remote channel's failure fails d's task (w). With a data plane the
// channels are added, in order, when the task's goroutine starts
// (wiring.run): a dial must not hold up the control messages the
// TaskManager receives on the goroutine that deploys.
func (tm *TaskManager) connect(w *wiring, job *Job, place []protocol.SlotPlacement, e *graph.JobEdge, key network.PartitionKey, n, sub int,
	gate *network.InputGate, input, channel int) error {
	if place == nil {
		return tm.connectNow(w, job, place, e, key, n, sub, gate, input, channel)
	}
	w.pending = append(w.pending, func() error { return tm.connectNow(w, job, place, e, key, n, sub, gate, input, channel) })
	return nil
}

func (tm *TaskManager) connectNow(w *wiring, job *Job, place []protocol.SlotPlacement, e *graph.JobEdge, key network.PartitionKey, n, sub int,
	gate *network.InputGate, input, channel int) error {
	if place == nil || place[key.Producer].TaskManager == tm.id {
		rp, err := tm.shuffle.Consume(key, n)
		if err != nil {
			return err
		}
		network.Connect(rp.Subs[sub], gate, input, channel, job.BuffersPerChannel)
		return nil
	}
	p := place[key.Producer]
	peer := tcp.Peer{ID: p.TaskManager, Addr: p.DataAddress}
	cl, err := tm.client(job)
	if err != nil {
		return err
	}
	conn, err := cl.Conn(context.Background(), peer)
	if err != nil {
		return fmt.Errorf("taskmanager %s: the input of %q from %q, subtask %d: %w", tm.id, e.Target.Name, e.Source.Name, key.Producer+1, err)
	}
	from := fmt.Sprintf("the input of %q from %q, subtask %d", e.Target.Name, e.Source.Name, key.Producer+1)
	floating, err := w.floatingPool(tm, job)
	if err != nil {
		return fmt.Errorf("taskmanager %s: %s: %w", tm.id, from, err)
	}
	ch, err := conn.Request(tcp.Request{Key: key, Subpartition: sub, Gate: gate, Input: input, Channel: channel, Floating: floating,
		Fail: func(err error) { w.fail(fmt.Errorf("the data plane: %s failed: %w", from, err)) }})
	if err != nil {
		return fmt.Errorf("taskmanager %s: %s: %w", tm.id, from, err)
	}
	w.mu.Lock()
	w.remote = append(w.remote, ch)
	w.mu.Unlock()
	return nil
}

// releaseData forgets the placements and the published partitions of the
// job's attempts up to r.Attempt (all of them once it ended).
func (tm *TaskManager) releaseData(r protocol.ReleaseJob) {
	ds := tm.data
	if ds == nil {
		return
	}
	ds.cfg.Server.Release(r.JobID, r.Attempt)
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if a, ok := ds.placed[r.JobID]; ok && (r.Ended || a.Attempt <= r.Attempt) {
		delete(ds.placed, r.JobID)
	}
	if r.Ended {
		delete(ds.jobs, r.JobID)
	}
}

// closeData closes the TaskManager's connections to other TaskManagers
// and releases every partition it published on the process's Server.
func (tm *TaskManager) closeData() {
	ds := tm.data
	if ds == nil {
		return
	}
	ds.mu.Lock()
	ds.closed = true
	clients, jobs := ds.clients, ds.jobs
	ds.clients, ds.jobs = map[[2]int]*tcp.Client{}, map[string]bool{}
	ds.mu.Unlock()
	for _, cl := range clients {
		cl.Close()
	}
	for j := range jobs {
		ds.cfg.Server.Release(j, int(^uint(0)>>1))
	}
}

// wiring is one execution's part in the data plane: its remote input
// channels, and the failures of its remote channels (either side), which
// fail its task as soon as the task exists.
type wiring struct {
	// pending adds the input channels when the task's goroutine starts;
	// only that goroutine touches it.
	pending []func() error

	mu     sync.Mutex // guards all below
	t      *task.Task
	err    error // the first failure
	remote []*tcp.Channel
	// floating is the gate's pool of floating buffers for its remote
	// channels (job.FloatingBuffers, Flink's
	// taskmanager.network.memory.floating-buffers-per-gate), created with
	// the first remote channel; it takes only what the network memory has
	// room for (no minimum), so it needs nothing of networkNeeds.
	floating *network.BufferPool
}

// floatingPool returns the gate's floating buffers, created on first use
// from tm's network memory (nil without a budget: unbudgeted tests).
func (w *wiring) floatingPool(tm *TaskManager, job *Job) (*network.BufferPool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.floating != nil || job.FloatingBuffers <= 0 || tm.budget == nil {
		return w.floating, nil
	}
	p, err := tm.budget.NewPool(0, job.FloatingBuffers, job.BufferSize)
	if err != nil {
		return nil, err
	}
	w.floating = p
	return p, nil
}

// run adds the pending input channels, then runs t, on the task's own
// goroutine.
func (w *wiring) run(t *task.Task, cancel <-chan struct{}) error {
	for _, connect := range w.pending {
		if err := connect(); err != nil {
			return err
		}
	}
	w.pending = nil
	return t.Run(cancel)
}

// fail fails the execution's task with err (the first failure only).
func (w *wiring) fail(err error) {
	w.mu.Lock()
	if w.err != nil {
		w.mu.Unlock()
		return
	}
	w.err = err
	t := w.t
	w.mu.Unlock()
	if t != nil {
		t.Fail(err)
	}
}

// bind hands failures to t from now on, and one that came before.
func (w *wiring) bind(t *task.Task) {
	w.mu.Lock()
	w.t = t
	err := w.err
	w.mu.Unlock()
	if err != nil {
		t.Fail(err)
	}
}

// close cancels the remote input channels that have not ended (the task
// returned): their producers drop them, their buffers go back, and the
// gate's floating buffers go back to the network memory.
func (w *wiring) close() {
	w.mu.Lock()
	chans, floating := w.remote, w.floating
	w.remote, w.floating = nil, nil
	w.mu.Unlock()
	for _, ch := range chans {
		ch.Cancel()
	}
	if floating != nil {
		floating.Close() // buffers still out may come home later
	}
}
