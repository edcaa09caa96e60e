// Package task runs one subtask: it builds the operator chain of a vertex for
// a subtask index, creates (and restores, before the operators open) each
// operator's state (keyed backend, timers, operator state), then runs the
// mailbox loop on a single goroutine. Input buffers, source polls, timers,
// mailbox actions (checkpoint triggers and notifications, operator events)
// and cancellation are all handled on that goroutine, so operators never
// need locks.
//
// The loop takes input only while every output can take a buffer, and
// otherwise waits for one while still serving its mailbox: a backpressured
// task still injects and aligns barriers. It hands over partly filled
// buffers then only when they are all their pool has out (flushStarved);
// the buffer timeout bounds their wait otherwise. A unit of work (an input buffer,
// a source batch) stops early when something needs the task (a priority
// barrier, mail, an output that ran dry) and goes on afterwards. At a
// barrier it takes the checkpoint's synchronous part (operator hooks, state
// stores, keyed backends), forwards the barrier, and uploads on a goroutine
// of its own (checkpoint.go); alignedtimeout.go promotes barriers held up
// by data past an aligned timeout; restore.go brings a checkpoint back.
// It recovers a panic once, at the loop, into the task's failure, with
// where it happened, the user's frames first (panicstack.go).
//
// The loop is type-erased; typed work happens in internal/operator, reached
// through the Factory and StreamType payloads of the graph's nodes.
package task
