// Package tcp is the data plane between TaskManager processes: it carries
// internal/network's buffers in internal/network/wire's frames over one
// connection per (consumer TaskManager, producer TaskManager) pair,
// dialed by the consumer (docs/distributed-runtime.md, decisions 15-23).
//
// It owns the connections and their two goroutines each (one reader, one
// writer), the HELLO exchange, the producer side (Server: partitions
// published by their producers, PARTITION_REQUESTs served from them,
// waiting for a partition not yet published up to
// PartitionRequestTimeout) and the consumer side (Conn: remote input
// channels in an InputGate, their receiver-owned buffers and credit;
// Client: one Conn per producer TaskManager, dialed again once ended). It
// is a library: nothing wires it into the TaskManager yet. It is written
// against net.Conn, a Dialer and a net.Listener, so a simulator can hand
// in in-memory connections (decision 26); NewDialer and Listen give real
// TCP with TCP_NODELAY, keepalive and TCP_USER_TIMEOUT (internal/tcpopt).
// It imports internal/network, network/wire, the standard library and
// x/sys; nothing of the JobManager, the TaskManager or internal/rpc
// (internal/layering).
//
// Invariants:
//   - Credit is internal/network's: the producer's Subpartition delivers
//     to a view (network.Receiver) only what its ledger's credit allows,
//     and the consumer's InputChannel grants back to a Channel
//     (network.Sender) one credit per data buffer recycled. Credit on the
//     wire is exclusive only: BuffersPerChannel per remote channel, granted
//     in the PARTITION_REQUEST and announced back in ADD_CREDIT frames
//     batched per write. A channel given its gate's pool of floating
//     buffers (Request.Floating) also takes floating buffers while the
//     backlog its producer's last BUFFER carried exceeds its credit
//     (decision 19), never waiting for one; its credit is always the
//     buffers it can hold (free ones of its own pool and floating ones it
//     took), so a recycled floating buffer goes back to the gate's pool
//     unless the backlog still wants it, and another channel takes it at
//     its next buffer or recycle.
//   - Buffers are owned by the receiver: the reader reads each BUFFER's
//     payload from the socket straight into a buffer of the channel's own
//     pool of BuffersPerChannel buffers (reserved from Config.Budget) or a
//     floating one it holds; the writer recycles the producer's buffer
//     once written. A data BUFFER beyond the channel's credit is a
//     protocol error, so there is always a buffer for it and the reader
//     never waits on a slow consumer.
//   - Channel ids are chosen by the consumer, dense per connection in
//     request order, never reused: slice indexes, no map. A channel that
//     ended, was cancelled or failed leaves a nil slot (frames still in
//     flight for it are skipped), so a connection's tables grow by one
//     pointer per channel it ever carried. Sequence numbers
//     run per channel from 0 (wire.Sequence); a gap or a repeat is a
//     protocol error.
//   - Every error of the connection (EOF, reset, timeout, a bad frame, a
//     sequence gap, no credit) fails every open channel of it at once,
//     with an error naming the peer TaskManager's id and address: Fail on
//     the consumer side, the hook given to Server.Publish on the producer
//     side. An error about one channel (its partition never published, a
//     subpartition asked twice, a priority event) fails that channel alone
//     with an ERROR frame.
//   - Priority events (unaligned checkpoint barriers; decision 21): the
//     producer's ledger keeps its backlog as output channel state
//     (Subpartition.AddPriority), and the writer sends the event before
//     every buffer of other channels it has not started on, but behind
//     what its own channel's ledger released before it. Sequence numbers
//     are taken in the ledger's order when the subpartition delivers, and
//     the reader requires a priority event to carry the next one: then
//     every buffer released before it has reached the channel's queue, and
//     InputChannel.DeliverPriority counts in Overtaken exactly those with a
//     lower number the consumer has not taken. An event that would skip
//     buffers still in flight is a protocol error naming the channel, the
//     numbers and the peer. An aligned barrier already queued for the
//     writer is promoted at the consumer (InputGate.PromoteBarrier).
//   - The writer gathers frames into one writev (net.Buffers) of up to
//     MaxWriteBytes; per data buffer nothing is allocated on either side.
//     Writes stay on the writer goroutines: writing inline on the goroutine
//     that queued the work (measured, docs/benchmarks.md "Tuning the data
//     plane") saved hand-offs but lost the batching the writer's wake-up
//     gives, and cost more CPU per event.
package tcp
