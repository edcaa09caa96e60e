// Package network moves serialized records between subtasks.
//
// It owns fixed-size buffers and the bounded pools they come from, the
// credit-based channel between one producing subpartition and one consuming
// input channel, the input gate a task waits on, and the framing of records
// inside buffers (records may span buffers). It knows nothing about record
// types: typed encoding lives in internal/operator.
//
// Flow control: a receiver grants one credit per free slot in its input
// channel; a subpartition hands a finished buffer over only while it holds
// credit and otherwise keeps it in its backlog. Buffers return to their
// producer's pool when the receiver is done with them, so a slow consumer
// stops handing buffers back, its producer's pool runs dry and the producer
// blocks in BufferPool.Request: backpressure, with memory bounded by the pools.
//
// The local transport (one process) hands buffer pointers across
// (Connect); a TCP transport (internal/network/tcp) frames the same
// buffers onto a connection. Either end of a channel reaches its peer
// through a small interface, so a transport can stand there: a
// Subpartition delivers to a Receiver (Attach), an InputChannel grants
// credit to a Sender (InputGate.AddChannel): one interface call per
// buffer, none per record.
package network
