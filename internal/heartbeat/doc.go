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
//
// # Where it departs from the design record
//
//   - A TaskManager counts its silence from the send time of its latest
//     acknowledged heartbeat, not from the last message of the JobManager:
//     that makes "the silent side fences first" (decision 13) hold always
//     rather than in the common case, and a JobManager still sending
//     triggers over a link silent the other way keeps nobody alive.
//   - A TaskManager fences as soon as its session ends, since a session is
//     never resumed (decision 12) and the JobManager redeploys at once on a
//     closed stream; heartbeat.rpc-failure-threshold (consecutive failed
//     reconnects) therefore has nothing left to decide and is not used.
//     Registration gives up after taskmanager.registration.timeout.
//   - A session the JobManager sees end by its own error (a timeout) is not
//     proof that the TaskManager knows: its slots wait as after a silent
//     loss. Only an end from the TaskManager's side (EOF, reset),
//     deregistration or a new registration free them at once.
package heartbeat
