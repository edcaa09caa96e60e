// Package heartbeat holds the membership decisions of the distributed
// runtime (docs/distributed-runtime.md, decisions 10-13) as pure state
// machines: heartbeats, loss detection, self-fencing, registration backoff
// and the reconciliation of what a TaskManager runs with what the
// JobManager deployed there.
//
// The package is pure, like the barrier handler and the checkpoint
// coordinator: it does no I/O, reads no clock, starts no goroutine and
// draws randomness only from the seed it is given. Every event brings its
// time (epoch ms) and returns what the caller must do, with the time to
// call Tick next. The same code therefore runs under the real transport, the
// embedded cluster and a deterministic simulator, which replays it exactly.
//
// It owns:
//   - Monitor, the JobManager's side: every TaskManager by stable id, the
//     silence deadline of each (its last heartbeat, or its registration,
//     plus heartbeat.timeout), the three other causes of loss (session
//     ended, deregistered, registered again), a reply to each heartbeat, and
//     for each loss the cause text and the earliest time the lost slots'
//     jobs may be deployed again (decision 13);
//   - Member, the TaskManager's side: registration with a bounded,
//     jittered exponential backoff and taskmanager.registration.timeout, a
//     heartbeat every heartbeat.interval, and fencing itself (cancel every
//     execution, register again) when its session ends or no heartbeat of
//     the last heartbeat.timeout was acknowledged;
//   - Reconcile, a function: which executions the TaskManager must cancel
//     and which the JobManager must fail, from one heartbeat; and Unheld,
//     the TaskManager's half: what to cancel after a HeartbeatReply.
//
// It does not own the sessions, the messages, the executions or the slots:
// those are the caller's, told by the outputs, whose doc comments say in
// what order to apply their fields.
//
// # Invariants
//
//   - Time never goes back inside a machine: an earlier now is taken as the
//     latest one seen. Each event first handles every deadline at or before
//     its now, then itself: a heartbeat exactly at the deadline is late.
//   - A Monitor declares a target lost once and forgets it; a heartbeat of a
//     lost target is ignored (its session is over and is never resumed).
//   - A target that heartbeats with gaps below heartbeat.timeout is never
//     lost by silence; one silent for heartbeat.timeout is lost at the first
//     event at or after its deadline, and WakeAt names that deadline.
//   - A Member fences no later than its Monitor declares it lost by
//     silence: its deadline counts from the send time of its latest
//     acknowledged heartbeat, which the JobManager received later. Loss
//     RedeployAt adds one heartbeat.interval to that bound, for the
//     cancellation itself and for clock rates.
//   - Reconcile never flags an execution still in flight: a deployment the
//     TaskManager has not processed, or an execution whose end the
//     JobManager has not seen, is left alone.
package heartbeat
