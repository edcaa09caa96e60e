package node

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirhq/weir/internal/cluster"
	"github.com/weirhq/weir/internal/ha"
	"github.com/weirhq/weir/internal/ha/etcdha"
	"github.com/weirhq/weir/internal/ha/kubeha"
	"github.com/weirhq/weir/internal/jobmanager"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/rpc"
)

// High availability (docs/high-availability.md, decisions 4-6): a
// JobManager process is a contender. While another leads it is a standby
// whose listeners refuse everything, naming the leader; when it wins a term
// it starts a JobManager under the term's epoch, records each submitted job
// in the HA store and runs again every job recorded there without a
// finished record, resumed from its latest recorded checkpoint under its
// id; when the term ends it cancels its jobs without recording them
// finished and campaigns again.

// Keys of the HA store (decision 4).
const (
	haJobs     = "jobs/"        // + job id: haJob
	haFinished = "finished/"    // + job id: haFinal
	haCkpts    = "checkpoints/" // + job id + "/latest" (haLatest) or "/reserved" (decimal id)
)

// haJob is a submission as the HA store keeps it.
type haJob struct {
	ID        string   `json:"id"`
	Program   string   `json:"program"`
	Args      []string `json:"args"`
	BuildID   string   `json:"buildId"`
	Submitted int64    `json:"submitted"` // epoch ms
	// An application's graph fingerprint and digest (of the graph and
	// the configuration's canonical text); a session-mode job's are its
	// build's, from Program and Args.
	Fingerprint string `json:"fingerprint,omitempty"`
	Digest      string `json:"digest,omitempty"`
}

// haFinal is a job's end as the HA store keeps it: the job is never run
// again.
type haFinal struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	At     int64  `json:"at"`
}

// err is the recorded end's error (nil for none).
func (f haFinal) err() error {
	if f.Error == "" {
		return nil
	}
	return errors.New(f.Error)
}

// outcome is the recorded end as a run's error: nil for FINISHED, one
// wrapping context.Canceled for CANCELED (so it is classified so).
func (f haFinal) outcome() error {
	switch {
	case f.Status == "FINISHED":
		return nil
	case f.Status == "CANCELED":
		return fmt.Errorf("%w: %s", context.Canceled, cmp.Or(f.Error, "the job was canceled"))
	}
	return errors.New(cmp.Or(f.Error, "the job ended "+f.Status))
}

// haLatest points to a job's latest completed checkpoint or savepoint.
type haLatest struct {
	ID   int64  `json:"id"`
	Path string `json:"path"`
}

// ContenderConfig configures a JobManager process with high availability.
type ContenderConfig struct {
	JobManager JobManagerConfig
	Service    ha.Service
	// Advertised is what the leader publishes: the RPC and REST addresses
	// TaskManagers, clients and standbys reach it at.
	Advertised ha.LeaderInfo
	// StoreTimeout bounds each HA store call (0: 5 s).
	StoreTimeout time.Duration
	// Outcome names a job's end for its finished record ("FINISHED",
	// "CANCELED" or "FAILED"); nil: FINISHED without error, else FAILED.
	Outcome func(error) string
	// Application, if set, makes this an application's JobManager
	// (decision 7): its leader runs the one job under a fixed id, and
	// RunContender returns once the application has ended.
	Application *ContenderApplication
}

// ContenderApplication is the one job of an application's JobManagers.
type ContenderApplication struct {
	// JobID is the job's id in every term (ApplicationJobID), so each new
	// leader continues its checkpoint lineage.
	JobID   string
	Program string
	Args    []string
	// Fingerprint and Digest describe the application (rpc.AppInfo), for
	// its record in the store.
	Fingerprint, Digest string
	// Run runs the job on c to its end (sub names the id, the checkpoint
	// to resume from and the term's fencing).
	Run RunJob
	// Ended is called once with the application's end: the job's, when it
	// ran to its end under this term (before the JobManager shuts down, so
	// that its TaskManagers hear of it), or the one an earlier leader
	// recorded.
	Ended func(status string, err error)
}

// ApplicationJobID is the fixed job id of the application with digest in
// HA cluster clusterID: every leader of the application derives the same.
func ApplicationJobID(clusterID, digest string) string {
	sum := sha256.Sum256([]byte("weir application\n" + clusterID + "\n" + digest))
	return hex.EncodeToString(sum[:16])
}

// errApplicationEnded ends RunContender: the application has ended.
var errApplicationEnded = errors.New("the application ended")

// OpenHA connects to the service s chooses (high-availability.type).
func OpenHA(ctx context.Context, s ha.Settings, logger *slog.Logger) (ha.Service, error) {
	switch s.Type {
	case "etcd":
		return etcdha.New(ctx, s, logger)
	case "kubernetes":
		return kubeha.New(ctx, s, logger)
	}
	return nil, fmt.Errorf("high-availability.type %q has no driver", s.Type)
}

// AdvertisedAt is the address a leader publishes for a listener bound at
// bound (named by setting): host with bound's port, else bound itself when
// its host is specific.
func AdvertisedAt(setting, host, bound string) (string, error) {
	h, port, err := net.SplitHostPort(bound)
	if err != nil {
		return "", fmt.Errorf("%s %q: %v", setting, bound, err)
	}
	if host != "" {
		return net.JoinHostPort(host, port), nil
	}
	if ip := net.ParseIP(h); h == "" || ip != nil && ip.IsUnspecified() {
		return "", fmt.Errorf("%s %s listens on every interface: with high availability give the host other processes reach this JobManager at (--advertised-address HOST, or %s in application mode)",
			setting, bound, "WEIR_ADVERTISED_ADDRESS")
	}
	return bound, nil
}

// RunContender campaigns, leads and campaigns again until ctx ends; then
// it resigns (so a standby takes over at once) and returns nil. Jobs are
// not canceled for good when it stops: they are the next leader's.
func RunContender(ctx context.Context, cfg ContenderConfig) error {
	jc := cfg.JobManager
	if cfg.StoreTimeout == 0 {
		cfg.StoreTimeout = 5 * time.Second
	}
	for _, a := range []struct{ flag, addr string }{{"--rpc-address", jc.RPCAddress}, {"--rest-address", jc.RESTAddress}} {
		if _, port, err := net.SplitHostPort(a.addr); err != nil || port == "0" {
			return fmt.Errorf("with high availability every JobManager needs a fixed %s (host:port, not port 0): a standby and the leader it becomes listen at the same address; got %q", a.flag, a.addr)
		}
	}
	log := jc.Logger
	for {
		sb, err := startStandby(ctx, cfg)
		if err != nil {
			return err
		}
		log.Info("JobManager is a standby: campaigning for leadership", "rpc", jc.RPCAddress, "rest", jc.RESTAddress)
		lead, err := cfg.Service.Campaign(ctx, cfg.Advertised)
		sb.close()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("campaigning for leadership: %w", err)
		}
		err = runLeader(ctx, cfg, lead)
		if errors.Is(err, errApplicationEnded) {
			// Resign at once: the standbys take over, find the end recorded
			// and end too.
			resign(lead, cfg)
			return nil
		}
		if ctx.Err() != nil {
			resign(lead, cfg)
			return err
		}
		if err != nil {
			return err
		}
		log.Info("JobManager stepped down: campaigning again", "epoch", lead.Epoch())
	}
}

// resign gives the term up, so that a standby takes over at once.
func resign(lead ha.Leadership, cfg ContenderConfig) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.StoreTimeout)
	defer cancel()
	if err := lead.Resign(ctx); err != nil {
		cfg.JobManager.Logger.Warn("resigning leadership failed: a standby takes over when the lease expires", "err", err)
	}
}

// leader is one term of leadership.
type leader struct {
	cfg      ContenderConfig
	store    ha.Store
	epoch    uint64
	stepping atomic.Bool // the term is ending: jobs that end now are not finished
	jobs     sync.WaitGroup
	c        *cluster.Local
	// recovered is closed once the store's jobs run again (or recovery
	// failed): a client re-attaching waits for it.
	recovered chan struct{}

	mu   sync.Mutex
	runs map[string]*termRun // by job id: the jobs run in this term
}

// termRun is a job run in a term: done is closed when it ended with err.
type termRun struct {
	done chan struct{}
	err  error
}

// started notes that job id runs in this term; the caller calls end with
// its outcome.
func (l *leader) started(id string) (end func(error)) {
	r := &termRun{done: make(chan struct{})}
	l.mu.Lock()
	l.runs[id] = r
	l.mu.Unlock()
	return func(err error) { r.err = err; close(r.done) }
}

// handedOver marks the error of a run that ended because the term did
// (rpc.ErrHandedOver): its client re-attaches to the next leader.
func (l *leader) handedOver(err error) error {
	if err == nil || !l.stepping.Load() {
		return err
	}
	return fmt.Errorf("%w: %v", rpc.ErrHandedOver, err)
}

// attach follows job id for a re-attaching client (rpc.Jobs.Attach): the
// run of this term, or the end an earlier leader recorded. The client
// going away cancels the job, as an attached submission's does.
func (l *leader) attach(ctx context.Context, id string) error {
	select {
	case <-l.recovered:
	case <-ctx.Done():
		return ctx.Err()
	}
	l.mu.Lock()
	r := l.runs[id]
	l.mu.Unlock()
	if r == nil {
		sctx, cancel := l.storeCtx()
		defer cancel()
		f, err := l.finished(sctx, id)
		switch {
		case err != nil:
			return fmt.Errorf("%w: job %s: %v", rpc.ErrUnknownJob, id, err)
		case f == nil:
			return fmt.Errorf("%w: job %s is neither running here nor recorded as ended", rpc.ErrUnknownJob, id)
		}
		return f.outcome()
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		if !l.stepping.Load() {
			l.c.JM.Cancel(id)
		}
		return ctx.Err()
	}
}

// runLeader leads until the term ends or ctx does.
func runLeader(ctx context.Context, cfg ContenderConfig, lead ha.Leadership) error {
	l := &leader{cfg: cfg, store: lead.Store(), epoch: lead.Epoch(), recovered: make(chan struct{}), runs: map[string]*termRun{}}
	jc := cfg.JobManager
	log := jc.Logger
	jc.Epoch = lead.Epoch()
	run := jc.Run
	if run != nil {
		jc.Run = func(ctx context.Context, c *cluster.Local, sub Submission) error { return l.submit(ctx, c, run, sub) }
		jc.Attach = l.attach
	}
	jm, err := StartJobManager(jc)
	if err != nil {
		return err
	}
	l.c = jm.Cluster()
	log.Info("JobManager leads", "epoch", l.epoch, "rpc", jm.RPCAddress(), "rest", jm.RESTAddress())
	// The jobs' context ends only after stepping is set (below), so a job
	// canceled because the term ended is never recorded as finished.
	jobsCtx, cancelJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelJobs()
	var appEnded <-chan haFinal
	if app := cfg.Application; app != nil {
		var recorded *haFinal
		appEnded, recorded, err = l.runApplication(jobsCtx, jm.Cluster(), app)
		if err == nil && recorded != nil {
			log.Info("the application has ended under an earlier leader: ending", "job", app.JobID, "status", recorded.Status)
			app.Ended(recorded.Status, recorded.err())
			l.stepping.Store(true)
			jm.Shutdown(context.Background())
			return errApplicationEnded
		}
	} else if run != nil {
		err = l.recoverJobs(jobsCtx, jm.Cluster(), run)
	}
	close(l.recovered)
	if err != nil {
		log.Error("recovering the jobs of the HA store failed: stepping down", "err", err)
		l.stepping.Store(true)
		jm.Shutdown(context.Background())
		// Give the term up, or the next campaign waits behind it.
		resign(lead, cfg)
		return nil // campaign again: the store may be back by then
	}
	ended := false
	select {
	case <-lead.Done():
		log.Warn("JobManager lost its leadership: canceling its jobs here, the next leader runs them", "epoch", l.epoch)
	case <-ctx.Done():
	case end := <-appEnded:
		// Before the JobManager shuts down: its TaskManagers hear of it.
		cfg.Application.Ended(end.Status, end.err())
		ended = true
	}
	l.stepping.Store(true)
	cancelJobs()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = jm.Shutdown(sctx)
	l.jobs.Wait()
	if ended {
		return errApplicationEnded
	}
	return err
}

func (l *leader) storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), l.cfg.StoreTimeout)
}

// submit records a session-mode submission in the store, then runs it.
func (l *leader) submit(ctx context.Context, c *cluster.Local, run RunJob, sub Submission) error {
	rec := haJob{ID: rest.NewJobID(), Program: sub.Program, Args: sub.Args, BuildID: BuildID(), Submitted: time.Now().UnixMilli()}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	sctx, cancel := l.storeCtx()
	err = l.store.Put(sctx, haJobs+rec.ID, b)
	cancel()
	if err != nil {
		return fmt.Errorf("recording the job in the HA store: %w", err)
	}
	sub.JobID, sub.Fencing, sub.Refresh = rec.ID, l.fencing(rec.ID, 0), l.refresh(rec.ID)
	l.jobs.Add(1)
	defer l.jobs.Done()
	end := l.started(rec.ID)
	err = run(ctx, c, sub)
	l.finish(rec.ID, err)
	err = l.handedOver(err)
	end(err)
	return err
}

// recoverJobs runs again every recorded job without a finished record.
func (l *leader) recoverJobs(ctx context.Context, c *cluster.Local, run RunJob) error {
	sctx, cancel := l.storeCtx()
	defer cancel()
	jobs, err := l.store.List(sctx, haJobs)
	if err != nil {
		return err
	}
	finished, err := l.store.List(sctx, haFinished)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(jobs))
	for key := range jobs {
		if id := strings.TrimPrefix(key, haJobs); finished[haFinished+id] == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	log := l.cfg.JobManager.Logger
	for _, id := range ids {
		var rec haJob
		if err := json.Unmarshal(jobs[haJobs+id], &rec); err != nil {
			return fmt.Errorf("the HA store's record of job %s: %w", id, err)
		}
		if rec.BuildID != BuildID() {
			// Another binary cannot build its graph: record its end, so
			// that no leader tries again.
			log.Error("a recorded job was submitted to another build: not recovered", "job", id, "build", rec.BuildID)
			l.finishWith(id, haFinal{Status: "FAILED", Error: fmt.Sprintf("submitted to build %s; the leader runs build %s", rec.BuildID, BuildID())})
			continue
		}
		sub, err := l.resumed(sctx, id, rec.Program, rec.Args, "recovering a job of the HA store")
		if err != nil {
			return err
		}
		l.jobs.Add(1)
		end := l.started(id)
		go func() {
			defer l.jobs.Done()
			err := run(ctx, c, sub)
			if err != nil && !l.stepping.Load() {
				log.Error("a recovered job failed", "job", id, "err", err)
			}
			l.finish(id, err)
			end(l.handedOver(err))
		}()
	}
	return nil
}

// runApplication starts the application's job under its fixed id, resumed
// from its latest recorded checkpoint, unless an earlier leader recorded
// its end (returned). The channel receives the job's end, once recorded,
// unless the term ends first.
func (l *leader) runApplication(ctx context.Context, c *cluster.Local, app *ContenderApplication) (<-chan haFinal, *haFinal, error) {
	sctx, cancel := l.storeCtx()
	defer cancel()
	if f, err := l.finished(sctx, app.JobID); err != nil || f != nil {
		return nil, f, err
	}
	rec, err := json.Marshal(haJob{ID: app.JobID, Program: app.Program, Args: app.Args, BuildID: BuildID(), Submitted: time.Now().UnixMilli(),
		Fingerprint: app.Fingerprint, Digest: app.Digest})
	if err != nil {
		return nil, nil, err
	}
	// Recorded in every term: the build may have changed (an upgrade that
	// keeps the job's graph and configuration continues its lineage).
	if err := l.store.Put(sctx, haJobs+app.JobID, rec); err != nil {
		return nil, nil, fmt.Errorf("recording the application in the HA store: %w", err)
	}
	sub, err := l.resumed(sctx, app.JobID, app.Program, app.Args, "running the application")
	if err != nil {
		return nil, nil, err
	}
	ended := make(chan haFinal, 1)
	l.jobs.Add(1)
	go func() {
		defer l.jobs.Done()
		err := app.Run(ctx, c, sub)
		if f, ok := l.finish(app.JobID, err); ok {
			ended <- f
		}
	}()
	return ended, nil, nil
}

// finished reads job id's recorded end; nil when it has none.
func (l *leader) finished(ctx context.Context, id string) (*haFinal, error) {
	b, err := l.store.Get(ctx, haFinished+id)
	switch {
	case errors.Is(err, ha.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	var f haFinal
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("the HA store's record of job %s's end: %w", id, err)
	}
	return &f, nil
}

// resumed is the submission that runs job id again in this term: from its
// latest recorded checkpoint, its checkpoint ids above every one reserved
// (decision 5). what names the run in the log.
func (l *leader) resumed(ctx context.Context, id, program string, args []string, what string) (Submission, error) {
	latest, reserved, err := l.checkpoints(ctx, id)
	if err != nil {
		return Submission{}, err
	}
	first := max(latest.ID, reserved) + 1
	l.cfg.JobManager.Logger.Info(what, "job", id, "program", program, "resume", latest.Path, "first_checkpoint", first)
	return Submission{Program: program, Args: args, JobID: id, ResumeFrom: latest.Path, Fencing: l.fencing(id, first), Refresh: l.refresh(id)}, nil
}

// checkpoints reads a job's latest recorded checkpoint and its highest
// reserved checkpoint id.
func (l *leader) checkpoints(ctx context.Context, id string) (latest haLatest, reserved int64, _ error) {
	b, err := l.store.Get(ctx, haCkpts+id+"/latest")
	switch {
	case errors.Is(err, ha.ErrNotFound):
	case err != nil:
		return latest, 0, err
	default:
		if err := json.Unmarshal(b, &latest); err != nil {
			return latest, 0, fmt.Errorf("the HA store's latest checkpoint of job %s: %w", id, err)
		}
	}
	b, err = l.store.Get(ctx, haCkpts+id+"/reserved")
	switch {
	case errors.Is(err, ha.ErrNotFound):
	case err != nil:
		return latest, 0, err
	default:
		if reserved, err = strconv.ParseInt(string(b), 10, 64); err != nil {
			return latest, 0, fmt.Errorf("the HA store's reserved checkpoint id of job %s: %w", id, err)
		}
	}
	return latest, reserved, nil
}

// refresh is Submission.Refresh of job id: its latest recorded
// checkpoint, and fencing that starts above every reserved id.
func (l *leader) refresh(id string) func() (string, *jobmanager.Fencing) {
	return func() (string, *jobmanager.Fencing) {
		sctx, cancel := l.storeCtx()
		defer cancel()
		latest, reserved, err := l.checkpoints(sctx, id)
		if err != nil {
			// The run fences against the store anyway: one that cannot
			// read it cannot complete a checkpoint either.
			l.cfg.JobManager.Logger.Warn("reading the job's checkpoints from the HA store failed", "job", id, "err", err)
		}
		return latest.Path, l.fencing(id, max(latest.ID, reserved)+1)
	}
}

// fencing fences job id's checkpoints by this term (decision 5): a
// checkpoint's id is recorded as reserved before its metadata is written
// (so a later leader starts above it and never writes the same
// checkpoint's folder), and a completed one is recorded before any task
// hears of it (so sinks commit only what the store records). Both writes
// fail once the term is over.
func (l *leader) fencing(id string, first int64) *jobmanager.Fencing {
	return &jobmanager.Fencing{
		FirstID: first,
		Fence: func(ctx context.Context, ckpt int64) error {
			ctx, cancel := context.WithTimeout(ctx, l.cfg.StoreTimeout)
			defer cancel()
			return l.store.Put(ctx, haCkpts+id+"/reserved", []byte(strconv.FormatInt(ckpt, 10)))
		},
		Completed: func(ctx context.Context, ckpt int64, path string) error {
			b, err := json.Marshal(haLatest{ID: ckpt, Path: path})
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, l.cfg.StoreTimeout)
			defer cancel()
			return l.store.Put(ctx, haCkpts+id+"/latest", b)
		},
	}
}

// finish records a job's end unless the term is ending (then the job was
// canceled here to be run again by the next leader); it returns the record
// and whether it was made.
func (l *leader) finish(id string, err error) (haFinal, bool) {
	if l.stepping.Load() {
		return haFinal{}, false
	}
	status := "FINISHED"
	if l.cfg.Outcome != nil {
		status = l.cfg.Outcome(err)
	} else if err != nil {
		status = "FAILED"
	}
	f := haFinal{Status: status}
	if err != nil {
		f.Error = err.Error()
	}
	return f, l.finishWith(id, f)
}

// finishWith records job id's end; it reports whether the store took it.
func (l *leader) finishWith(id string, f haFinal) bool {
	f.At = time.Now().UnixMilli()
	b, err := json.Marshal(f)
	if err != nil {
		return false
	}
	sctx, cancel := l.storeCtx()
	defer cancel()
	if err := l.store.Put(sctx, haFinished+id, b); err != nil {
		l.cfg.JobManager.Logger.Warn("recording a job's end in the HA store failed: the next leader runs it again", "job", id, "err", err)
		return false
	}
	return true
}

// standby is a contender's listeners while another leads.
type standby struct {
	rpc    *rpc.Standby
	rest   *http.Server
	done   chan struct{}
	cancel context.CancelFunc
}

// startStandby listens on the JobManager's RPC and REST addresses and
// refuses every request there, naming the leader (Flink's REST answers 503
// while it does not lead; here with the leader's address and a Location).
func startStandby(ctx context.Context, cfg ContenderConfig) (*standby, error) {
	jc := cfg.JobManager
	var mu sync.Mutex
	var current ha.LeaderInfo
	pctx, cancel := context.WithCancel(ctx)
	refresh := func() {
		lctx, c := context.WithTimeout(pctx, cfg.StoreTimeout)
		info, _, ok, err := cfg.Service.Leader(lctx)
		c()
		if err != nil {
			return
		}
		if !ok {
			info = ha.LeaderInfo{}
		}
		mu.Lock()
		current = info
		mu.Unlock()
	}
	refresh()
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-pctx.Done():
				return
			case <-t.C:
				refresh()
			}
		}
	}()
	leaderInfo := func() ha.LeaderInfo { mu.Lock(); defer mu.Unlock(); return current }
	rs, _, err := rpc.StartStandby(jc.RPCAddress, func() string { return leaderInfo().RPCAddress }, jc.Logger)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("the standby JobManager's RPC listener on %s: %w", jc.RPCAddress, err)
	}
	s := &standby{rpc: rs, cancel: cancel, done: make(chan struct{})}
	l, err := net.Listen("tcp", jc.RESTAddress)
	if err != nil {
		rs.Close()
		cancel()
		return nil, fmt.Errorf("the standby JobManager's REST listener on %s: %w", jc.RESTAddress, err)
	}
	s.rest = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := leaderInfo()
		msg := "this JobManager is a standby and no JobManager leads yet; try again shortly"
		if info.RESTAddress != "" {
			msg = "this JobManager is a standby; the leader's REST API is at http://" + info.RESTAddress
			w.Header().Set("Location", "http://"+info.RESTAddress+r.URL.RequestURI())
		}
		w.Header().Set(rpc.LeaderHeader, info.RPCAddress)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(map[string]any{"errors": []string{msg}, "leader": map[string]string{"rest": info.RESTAddress, "rpc": info.RPCAddress}})
	})}
	go func() {
		defer close(s.done)
		s.rest.Serve(l)
	}()
	return s, nil
}

func (s *standby) close() {
	s.cancel()
	s.rpc.Close()
	s.rest.Close()
	<-s.done
}
