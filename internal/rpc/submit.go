package rpc

import (
	"context"
	"errors"
	"fmt"
	"net/http"

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
}

// Submission is a job's progress as its submitting client sees it.
type Submission struct {
	JobID, RESTAddress string
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
	final := func(err error) error {
		u := &weirpb.JobUpdate{Final: true, RestAddress: jobs.RESTAddress}
		if err != nil {
			u.Error, u.Outcome = err.Error(), jobs.Outcome(err)
		}
		return st.Send(u)
	}
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

// SubmitJob submits program with args to the JobManager at address and
// calls progress with its id once submitted; unless detached, it then
// waits for the job's end and returns it (Submission.Err). Canceling ctx
// of a job not detached cancels the job.
//
// address may list every JobManager of a cluster with high availability
// ("a:6123,b:6123"): the job goes to the one that leads (a standby names
// it).
func SubmitJob(ctx context.Context, address, buildID, program string, args []string, detached bool, progress func(Submission)) (Submission, error) {
	jms := newLeaderFollower(address)
	var err error
	for range 2*len(jms.addrs) + 1 {
		a := jms.pick()
		var s Submission
		var unanswered bool
		s, err, unanswered = submitJob(ctx, a, buildID, program, args, detached, progress)
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
	tr := &http.Transport{Protocols: new(http.Protocols), DialContext: Dialer(TCP{}.withDefaults())}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	api := weirpbconnect.NewJobManagerServiceClient(&http.Client{Transport: tr}, "http://"+address)
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
			if u.GetError() != "" {
				s.Err, s.Outcome = errors.New(u.GetError()), u.GetOutcome()
			}
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
			return s, fmt.Errorf("lost the JobManager at %s while following job %s (%w); under high availability the job goes on with the next leader: follow it with weir list", address, s.JobID, submitError(address, err)), false
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
