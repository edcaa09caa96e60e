package jobmanager

import (
	"fmt"
	"time"

	"github.com/weirhq/weir/internal/opcoordinator"
	"github.com/weirhq/weir/internal/protocol"
)

// opCoordinator hosts one operator's coordinator for the current attempt.
type opCoordinator struct {
	jm          *JobManager
	j           *job
	vertex      int
	operatorID  string
	parallelism int
	c           opcoordinator.Coordinator
	// closed is set when the coordinator of a later attempt replaced it.
	closed bool
	// stop is closed with it: the CallAsync goroutines end.
	stop chan struct{}
}

// CallAsync implements opcoordinator.AsyncContext: fn runs on a
// goroutine of its own, on the job's clock; handler runs under the
// JobManager's lock (where the coordinator's other methods run), unless the
// coordinator was closed or the job is not running (then the result is
// dropped).
func (o *opCoordinator) CallAsync(fn func() (any, error), handler func(any, error) error, initialDelay, period time.Duration) {
	if o.closed {
		return
	}
	if o.stop == nil {
		o.stop = make(chan struct{})
	}
	stop, clk := o.stop, o.j.spec.Clock
	go func() {
		d := initialDelay
		for {
			t := clk.NewTimer(max(d, 0))
			select {
			case <-stop:
				t.Stop()
				return
			case <-t.C():
			}
			select {
			case <-stop: // closed while the timer fired
				return
			default:
			}
			v, err := fn()
			o.jm.mu.Lock()
			if !o.closed && o.j.state.status == protocol.JobRunning {
				if herr := handler(v, err); herr != nil {
					o.jm.failFromCoordinatorLocked(o.j, fmt.Errorf("the coordinator of operator %s: %w", o.operatorID, herr))
				}
			}
			o.jm.mu.Unlock()
			if period <= 0 {
				return
			}
			d = period
		}
	}()
}

// SendEvent implements opcoordinator.Context. It is called with the
// JobManager's lock held (coordinators run under it): the event is queued.
func (o *opCoordinator) SendEvent(subtask int, payload []byte) {
	if o.closed {
		return
	}
	i, ok := o.j.index[[2]int{o.vertex, subtask}]
	if !ok || o.j.tmOf[i] == nil {
		return
	}
	o.j.tmOf[i].send(protocol.OperatorEvent{Exec: o.j.execs[i], OperatorID: o.operatorID, Payload: payload})
}

// Parallelism implements opcoordinator.Context.
func (o *opCoordinator) Parallelism() int { return o.parallelism }

// Shared implements opcoordinator.Context. Coordinators run with the
// JobManager's lock held, so what they share needs no lock of its own.
func (o *opCoordinator) Shared(key string, create func() any) any {
	v, ok := o.j.shared[key]
	if !ok {
		v = create()
		o.j.shared[key] = v
	}
	return v
}

func (o *opCoordinator) close() {
	if !o.closed {
		o.closed = true
		if o.stop != nil {
			close(o.stop)
		}
		o.c.Close()
	}
}

// startCoordinators (re)creates the operator coordinators of the current
// attempt, restored from the checkpoint it restores, if any.
func (jm *JobManager) startCoordinators(j *job) error {
	for _, c := range j.coords {
		c.close()
	}
	j.coords = map[string]*opCoordinator{}
	j.shared = map[string]any{}
	g := j.spec.Graph
	for vi, v := range g.Vertices {
		for _, n := range v.Nodes {
			f, ok := n.Coordinator.(opcoordinator.Factory)
			if !ok {
				continue
			}
			opID := g.OperatorIDs[n.ID]
			var restored []byte
			if j.restore != nil {
				for _, os := range j.restore.Operators {
					if os.OperatorID != opID || os.Coordinator == nil {
						continue
					}
					if os.Coordinator[0] != coordStateV1 {
						return fmt.Errorf("checkpoint %d: the coordinator state of %q has unknown version %d", j.restore.CheckpointID, n.Name, os.Coordinator[0])
					}
					restored = os.Coordinator[1:]
				}
			}
			oc := &opCoordinator{jm: jm, j: j, vertex: vi, operatorID: opID, parallelism: v.Parallelism}
			c, err := f.CreateCoordinator(oc, restored)
			if err != nil {
				return fmt.Errorf("creating the coordinator of %q: %w", n.Name, err)
			}
			oc.c = c
			if err := c.Start(); err != nil {
				return fmt.Errorf("starting the coordinator of %q: %w", n.Name, err)
			}
			j.coords[opID] = oc
		}
	}
	return nil
}

// SendEvent implements protocol.JobManagerGateway: an event from a subtask
// to its operator's coordinator.
func (jm *JobManager) SendEvent(e protocol.OperatorEvent) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	j, _, ok := jm.execLocked(e.Exec)
	if !ok || j.state.status != protocol.JobRunning {
		return
	}
	oc, ok := j.coords[e.OperatorID]
	if !ok {
		return
	}
	if err := oc.c.HandleEvent(e.Exec.Subtask, e.Payload); err != nil {
		jm.failFromCoordinatorLocked(j, fmt.Errorf("the coordinator of operator %s: %w", e.OperatorID, err))
	}
}

// failFromCoordinatorLocked fails the job (through a restart, if allowed)
// for an error outside any task.
func (jm *JobManager) failFromCoordinatorLocked(j *job, err error) {
	toCancel := j.state.fail(err)
	j.failure = &Failure{Err: err, Time: j.spec.Clock.Now()}
	j.exceptions = append(j.exceptions, *j.failure)
	if j.cp != nil {
		jm.suspendCheckpointsLocked(j)
	}
	jm.cancelLocked(j, toCancel)
	jm.afterUpdateLocked(j)
}
