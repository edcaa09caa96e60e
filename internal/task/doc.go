// Package task runs one subtask: it builds the operator chain of a vertex for
// a subtask index, then runs the mailbox loop on a single goroutine. Input
// buffers, source polls, timers, mailbox actions and cancellation are all
// handled on that goroutine, so operators never need locks.
//
// The loop is type-erased; typed work happens in internal/operator, reached
// through the Factory and StreamType payloads of the graph's nodes.
package task
