package rpc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/weirhq/weir/internal/rpc/weirpb"
)

// AppInfo describes the application an application-mode JobManager runs
// (docs/distributed-runtime.md, decisions 3 and 4): every process runs
// the same program with Args and must build the same job.
type AppInfo struct {
	Name string
	Args []string
	// Fingerprint is the job graph's; Config the canonical text of the
	// job's configuration; Digest what a TaskManager that built the same
	// registers with (Registration.Application).
	Fingerprint, Config, Digest string
}

// AppEnd is how an application ended: its job's final state and, unless
// it finished, why.
type AppEnd struct {
	JobID, Status string
	Err           error
}

// Application serves Application: the application's description, then
// its end to every TaskManager that asks, so that they end with it.
type Application struct {
	BuildID string
	Info    AppInfo

	mu      sync.Mutex
	done    chan struct{}
	end     AppEnd
	serving atomic.Int64 // Application calls in progress
}

// NewApplication is the Application of info, in a JobManager of build.
func NewApplication(build string, info AppInfo) *Application {
	return &Application{BuildID: build, Info: info, done: make(chan struct{})}
}

// Finish records the application's end and tells every TaskManager that
// follows it; later calls are ignored.
func (a *Application) Finish(end AppEnd) {
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-a.done:
	default:
		a.end = end
		close(a.done)
	}
}

// Drain waits, at most timeout, until every TaskManager following the
// application has been told of its end (after Finish).
func (a *Application) Drain(timeout time.Duration) {
	for deadline := time.Now().Add(timeout); a.serving.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}

// Application implements the generated service.
func (h handler) Application(ctx context.Context, req *connect.Request[weirpb.ApplicationRequest], st *connect.ServerStream[weirpb.ApplicationUpdate]) error {
	app := h.s.cfg.Application
	if app == nil {
		return connect.NewError(connect.CodeFailedPrecondition, errors.New(
			"this JobManager runs in session mode (weir jobmanager): it runs jobs submitted to it, not an application; start TaskManagers for it with weir taskmanager"))
	}
	if got := req.Msg.GetBuildId(); got != app.BuildID {
		return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf(
			"TaskManager %s runs build %s and the JobManager build %s: every process of an application runs the same binary", req.Msg.GetTaskmanagerId(), got, app.BuildID))
	}
	app.serving.Add(1)
	defer app.serving.Add(-1)
	h.s.log.Info("rpc: TaskManager follows the application", "taskmanager", req.Msg.GetTaskmanagerId())
	i := app.Info
	if err := st.Send(&weirpb.ApplicationUpdate{Name: i.Name, Args: i.Args, Fingerprint: i.Fingerprint, Config: i.Config, Digest: i.Digest}); err != nil {
		return err
	}
	select {
	case <-app.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	u := &weirpb.ApplicationUpdate{Final: true, Status: app.end.Status, JobId: app.end.JobID}
	if app.end.Err != nil {
		u.Error = app.end.Err.Error()
	}
	return st.Send(u)
}

// AppFollower is a TaskManager's view of the application it serves: Info
// at once, then End when the JobManager reports it.
type AppFollower struct {
	Info AppInfo
	st   *connect.ServerStreamForClient[weirpb.ApplicationUpdate]
	tr   *http.Transport
}

// FollowApplication asks the application-mode JobManager at address which
// application it runs, retrying with backoff while nobody answers (the
// JobManager may start after its TaskManagers) until backoff.Timeout
// (taskmanager.registration.timeout). address may list every JobManager of
// an application with high availability ("a:6123,b:6123"): each attempt
// tries the next, or at once the leader a standby named, and while standbys
// answer the attempts keep the first backoff step's pace (an election is
// under way). A refusal (another build, a session-mode JobManager) is
// ErrRefused. waiting, if set, is called with the first attempt's error
// when it retries.
func FollowApplication(ctx context.Context, address, buildID, taskManager string, backoff Backoff, waiting func(error)) (*AppFollower, error) {
	backoff = backoff.withDefaults()
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	deadline := time.Now().Add(backoff.Timeout)
	jms := newLeaderFollower(address)
	follows, warned := 0, false
	for n := 0; ; n++ {
		at := jms.pick()
		f, err := followOnce(ctx, at, buildID, taskManager)
		if err == nil || errors.Is(err, ErrRefused) || ctx.Err() != nil {
			return f, err
		}
		if jms.refused(at, err) && follows < 3 {
			follows++
			n--
			continue
		}
		follows = 0
		if notLeader(at, err) != nil {
			n = 0
		}
		if !warned && waiting != nil {
			warned = true
			waiting(err)
		}
		d := backoff.delay(n, r)
		if time.Now().Add(d).After(deadline) {
			return nil, fmt.Errorf("rpc: no application-mode JobManager answered at %s within %v (taskmanager.registration.timeout): %w",
				address, backoff.Timeout, err)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("rpc: asking the JobManager at %s for its application: %w (last attempt: %v)", address, ctx.Err(), err)
		case <-t.C:
		}
	}
}

func followOnce(ctx context.Context, address, buildID, taskManager string) (*AppFollower, error) {
	api, tr := callClient(address)
	st, err := api.Application(ctx, connect.NewRequest(&weirpb.ApplicationRequest{BuildId: buildID, TaskmanagerId: taskManager}))
	if err == nil && !st.Receive() {
		err = st.Err()
		if err == nil {
			err = errors.New("the JobManager ended the call without describing its application")
		}
	}
	if err != nil {
		if st != nil {
			st.Close()
		}
		tr.CloseIdleConnections()
		var ce *connect.Error
		if errors.As(err, &ce) && ce.Code() == connect.CodeFailedPrecondition {
			return nil, fmt.Errorf("%w: the JobManager at %s: %s", ErrRefused, address, ce.Message())
		}
		return nil, err
	}
	m := st.Msg()
	return &AppFollower{Info: AppInfo{Name: m.GetName(), Args: m.GetArgs(), Fingerprint: m.GetFingerprint(), Config: m.GetConfig(), Digest: m.GetDigest()},
		st: st, tr: tr}, nil
}

// End waits for the application's end. It returns an error when the call
// broke first (the JobManager went away): then the end is unknown.
func (f *AppFollower) End() (AppEnd, error) {
	defer f.tr.CloseIdleConnections()
	for f.st.Receive() {
		m := f.st.Msg()
		if m.GetFinal() {
			end := AppEnd{JobID: m.GetJobId(), Status: m.GetStatus()}
			if m.GetError() != "" {
				end.Err = errors.New(m.GetError())
			}
			return end, nil
		}
	}
	err := f.st.Err()
	if err == nil {
		err = errors.New("the JobManager ended the call without the application's end")
	}
	return AppEnd{}, err
}

// Close stops following (End returns).
func (f *AppFollower) Close() {
	f.st.Close()
	f.tr.CloseIdleConnections()
}
