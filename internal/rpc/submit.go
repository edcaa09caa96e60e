package rpc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"connectrpc.com/connect"

	"github.com/weirhq/weir/internal/rpc/weirpb"
	"github.com/weirhq/weir/internal/rpc/weirpb/weirpbconnect"
)

// Jobs serves SubmitJob: session mode's submission of a job compiled into
// the binary (docs/distributed-runtime.md, decision 2).
type Jobs struct {
	// BuildID is the JobManager's build: a client of another build is
	// refused, since every process builds the job from its name and
	// arguments.
	BuildID string
	// RESTAddress is the JobManager's REST API, told to clients.
	RESTAddress string
	// Run runs program with args until its job ends, and returns its
	// outcome (nil: finished). It calls submitted with the job's id once
	// the job is submitted. Canceling ctx cancels the job.
	Run func(ctx context.Context, program string, args []string, submitted func(id string)) error
	// Outcome classifies Run's error for the client's exit code: "usage",
	// "canceled" or "failed".
	Outcome func(error) string
	// Attach, if set, follows job id until it ends and returns its outcome
	// as Run does; an error wrapping ErrUnknownJob when this JobManager
	// neither runs nor recorded it. Canceling ctx cancels the job. Without
	// it a re-attaching client is refused.
	Attach func(ctx context.Context, id string) error
}

// ErrHandedOver wraps the error of a job canceled because its JobManager
// stepped down (high availability): the job goes on under the next leader,
// so its client is not told an end but loses the call, and re-attaches.
var ErrHandedOver = errors.New("the JobManager stepped down; the job goes on under the next leader")

// ErrUnknownJob is Jobs.Attach's error for a job the JobManager does not
// know.
var ErrUnknownJob = errors.New("no such job here")

// Submission is a job's progress as its submitting client sees it.
type Submission struct {
	JobID, RESTAddress string
	// Lost, in a progress update, is the JobManager an attached client
	// lost while its job ran: it now looks for the next leader (reattach).
	Lost string
	// Err is the job's failure, nil once it finished; Outcome classifies
	// it (Jobs.Outcome).
	Err     error
	Outcome string
}

// SubmitJob implements the generated service: it runs the job and reports
// its id, then (unless detached) its end. A client that goes away cancels
// a job it did not detach.
func (h handler) SubmitJob(ctx context.Context, req *connect.Request[weirpb.SubmitRequest], st *connect.ServerStream[weirpb.JobUpdate]) error {
	jobs := h.s.cfg.Jobs
	if jobs == nil {
		return connect.NewError(connect.CodeUnimplemented, errors.New("rpc: this JobManager runs no submitted jobs"))
	}
	if got := req.Msg.GetBuildId(); got != jobs.BuildID {
		return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf(
			"the client runs build %s and the JobManager build %s: every process builds the job from its name and arguments, so they must run the same binary", got, jobs.BuildID))
	}
	if id := req.Msg.GetAttachJobId(); id != "" {
		return h.attach(ctx, jobs, id, st)
	}
	program, args := req.Msg.GetProgram(), req.Msg.GetArgs()
	h.s.log.Info("rpc: job submitted", "program", program, "args", args, "detached", req.Msg.GetDetached())
	runCtx := ctx
	if req.Msg.GetDetached() {
		runCtx = context.WithoutCancel(ctx)
	}
	submitted := make(chan string, 1)
	ended := make(chan error, 1)
	go func() {
		ended <- jobs.Run(runCtx, program, args, func(id string) { submitted <- id })
	}()
	final := func(err error) error { return sendFinal(jobs, st, err) }
	select {
	case id := <-submitted:
		if err := st.Send(&weirpb.JobUpdate{JobId: id, RestAddress: jobs.RESTAddress}); err != nil {
			return err
		}
		if req.Msg.GetDetached() {
			return nil
		}
	case err := <-ended:
		return final(err) // it could not start
	}
	select {
	case err := <-ended:
		return final(err)
	case <-ctx.Done():
		// The client went away: runCtx was ctx, so the job is canceling.
		<-ended
		return ctx.Err()
	}
}

// sendFinal sends a job's end to its client, or for a job handed over to
// the next leader ends the call unavailable (the client re-attaches).
func sendFinal(jobs *Jobs, st *connect.ServerStream[weirpb.JobUpdate], err error) error {
	if errors.Is(err, ErrHandedOver) {
		return connect.NewError(connect.CodeUnavailable, err)
	}
	u := &weirpb.JobUpdate{Final: true, RestAddress: jobs.RESTAddress}
	if err != nil {
		u.Error, u.Outcome = err.Error(), jobs.Outcome(err)
	}
	return st.Send(u)
}

// attach serves a client re-attaching to job id: its end, as a submission's.
func (h handler) attach(ctx context.Context, jobs *Jobs, id string, st *connect.ServerStream[weirpb.JobUpdate]) error {
	if jobs.Attach == nil {
		return connect.NewError(connect.CodeUnimplemented, errors.New("rpc: this JobManager does not follow jobs across leaders (it runs without high availability)"))
	}
	h.s.log.Info("rpc: a client re-attached", "job", id)
	err := jobs.Attach(ctx, id)
	if errors.Is(err, ErrUnknownJob) {
		return connect.NewError(connect.CodeNotFound, err)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return sendFinal(jobs, st, err)
}

// SubmitJob submits program with args to the JobManager at address and
// calls progress with its id once submitted; unless detached, it then
// waits for the job's end and returns it (Submission.Err). Canceling ctx
// of a job not detached cancels the job.
//
// address may list every JobManager of a cluster with high availability
// ("a:6123,b:6123"): the job goes to the one that leads (a standby names
// it), and when that one is lost while an attached job runs, the client
// follows the job at the next leader (reattach).
func SubmitJob(ctx context.Context, address, buildID, program string, args []string, detached bool, progress func(Submission)) (Submission, error) {
	jms := newLeaderFollower(address)
	var err error
	for range 2*len(jms.addrs) + 1 {
		a := jms.pick()
		var s Submission
		var unanswered bool
		s, err, unanswered = submitJob(ctx, a, buildID, program, args, detached, progress)
		var lost *lostError
		if errors.As(err, &lost) && ctx.Err() == nil {
			if len(jms.addrs) > 1 {
				if progress != nil {
					progress(Submission{JobID: s.JobID, Lost: lost.address})
				}
				return reattach(ctx, jms, address, buildID, s, lost)
			}
			return s, fmt.Errorf("%v; under high availability the job goes on with the next leader: follow it with weir list, or give every JobManager (--jobmanager a,b) to follow it", lost)
		}
		if err == nil || s.JobID != "" || ctx.Err() != nil {
			return s, err
		}
		var nl *NotLeaderError
		if errors.As(err, &nl) {
			jms.refused(a, err)
		} else if !unanswered {
			return s, err // refused by a leader: another JobManager would not do better
		}
	}
	return Submission{}, err
}

// submitJob submits to one JobManager; unanswered says it was not reached.
func submitJob(ctx context.Context, address, buildID, program string, args []string, detached bool, progress func(Submission)) (_ Submission, _ error, unanswered bool) {
	api, tr := callClient(address)
	defer tr.CloseIdleConnections()
	st, err := api.SubmitJob(ctx, connect.NewRequest(&weirpb.SubmitRequest{Program: program, Args: args, BuildId: buildID, Detached: detached}))
	if err != nil {
		if nl := notLeader(address, err); nl != nil {
			return Submission{}, nl, false
		}
		var ce *connect.Error
		return Submission{}, submitError(address, err), errors.As(err, &ce) && ce.Code() == connect.CodeUnavailable
	}
	defer st.Close()
	var s Submission
	for st.Receive() {
		u := st.Msg()
		s.RESTAddress = u.GetRestAddress()
		if u.GetJobId() != "" {
			s.JobID = u.GetJobId()
			if progress != nil {
				progress(s)
			}
		}
		if u.GetFinal() {
			s.Outcome, s.Err = endOf(u)
			return s, nil, false
		}
	}
	if err := st.Err(); err != nil {
		if s.JobID == "" {
			if nl := notLeader(address, err); nl != nil {
				return s, nl, false
			}
		}
		var ce *connect.Error
		if s.JobID != "" && !(errors.As(err, &ce) && ce.Code() == connect.CodeCanceled) {
			return s, &lostError{address: address, job: s.JobID, err: submitError(address, err)}, false
		}
		return s, submitError(address, err), s.JobID == "" && errors.As(err, &ce) && ce.Code() == connect.CodeUnavailable
	}
	if detached && s.JobID != "" {
		return s, nil, false
	}
	return s, fmt.Errorf("the JobManager at %s ended the submission without the job's outcome", address), false
}

// submitError names the JobManager and, for a refused connection, what to
// check.
func submitError(address string, err error) error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		switch ce.Code() {
		case connect.CodeUnavailable:
			return fmt.Errorf("no JobManager answers at %s (weir jobmanager --rpc-address): %s", address, ce.Message())
		case connect.CodeFailedPrecondition, connect.CodeUnimplemented:
			return fmt.Errorf("the JobManager at %s refused the job: %s", address, ce.Message())
		case connect.CodeCanceled:
			return context.Canceled
		}
		return fmt.Errorf("submitting to the JobManager at %s: %s", address, ce.Message())
	}
	return fmt.Errorf("submitting to the JobManager at %s: %w", address, err)
}

// lostError is an attached submission whose JobManager went away while the
// job ran.
type lostError struct {
	address, job string
	err          error
}

func (e *lostError) Error() string {
	return fmt.Sprintf("lost the JobManager at %s while following job %s (%v)", e.address, e.job, e.err)
}

func (e *lostError) Unwrap() error { return e.err }

// reattachFor bounds how long a client whose JobManager was lost looks for
// a leader that runs its job: an election takes about one lease.
const reattachFor = 2 * time.Minute

// reattach follows job s.JobID, whose JobManager was lost, at whichever
// JobManager of the list leads next (high availability: the new leader
// runs it again under the same id), until the job ends. Without high
// availability nobody does, and after reattachFor the loss is the error.
func reattach(ctx context.Context, jms *leaderFollower, address, buildID string, s Submission, lost *lostError) (Submission, error) {
	deadline := time.Now().Add(reattachFor)
	pace := Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	var last error = lost
	for n, follows := 0, 0; time.Now().Before(deadline); {
		a := jms.pick()
		end, err := attachOnce(ctx, a, buildID, s.JobID)
		if err == nil {
			end.JobID = s.JobID
			return end, nil
		}
		if ctx.Err() != nil {
			return s, ctx.Err()
		}
		var ce *connect.Error
		if errors.As(err, &ce) && (ce.Code() == connect.CodeNotFound || ce.Code() == connect.CodeUnimplemented) {
			return s, fmt.Errorf("%v; the JobManager at %s leads now but does not follow it: %s", lost, a, ce.Message())
		}
		if jms.refused(a, err) && follows < 3 {
			follows++
			continue
		}
		follows, last = 0, err
		t := time.NewTimer(pace.delay(n, r))
		n++
		select {
		case <-ctx.Done():
			t.Stop()
			return s, ctx.Err()
		case <-t.C:
		}
	}
	return s, fmt.Errorf("%v, and no JobManager of %s that runs it answered within %v (last: %v); with high availability the job may go on: see weir list", lost, address, reattachFor, last)
}

// attachOnce follows job id at one JobManager until its end.
func attachOnce(ctx context.Context, address, buildID, id string) (Submission, error) {
	api, tr := callClient(address)
	defer tr.CloseIdleConnections()
	st, err := api.SubmitJob(ctx, connect.NewRequest(&weirpb.SubmitRequest{BuildId: buildID, AttachJobId: id}))
	if err != nil {
		return Submission{}, err
	}
	defer st.Close()
	for st.Receive() {
		u := st.Msg()
		if u.GetFinal() {
			s := Submission{RESTAddress: u.GetRestAddress()}
			s.Outcome, s.Err = endOf(u)
			return s, nil
		}
	}
	if err := st.Err(); err != nil {
		return Submission{}, err
	}
	return Submission{}, fmt.Errorf("the JobManager at %s ended the call without job %s's outcome", address, id)
}

// endOf is the job's end a final update tells: its error's class and the
// error ("" and nil once it finished).
func endOf(u *weirpb.JobUpdate) (outcome string, err error) {
	if u.GetError() == "" {
		return "", nil
	}
	return u.GetOutcome(), errors.New(u.GetError())
}

// callClient is a client of one JobManager for a single call (a
// submission, a re-attachment, an application's description): its own
// h2c transport, which the caller closes when the call is over.
func callClient(address string) (weirpbconnect.JobManagerServiceClient, *http.Transport) {
	tr := &http.Transport{Protocols: new(http.Protocols), DialContext: Dialer(TCP{}.withDefaults())}
	tr.Protocols.SetUnencryptedHTTP2(true)
	return weirpbconnect.NewJobManagerServiceClient(&http.Client{Transport: tr}, "http://"+address), tr
}
