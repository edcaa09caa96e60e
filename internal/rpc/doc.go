// Package rpc is the control plane between a JobManager and its
// TaskManagers across processes (docs/distributed-runtime.md, decisions
// 5-7 and 23): Connect (connectrpc.com/connect) with protobuf over HTTP/2
// cleartext (h2c), the service and messages declared in
// proto/weir/cluster/v1/cluster.proto and generated into weirpb
// (scripts/gen-proto).
//
// It owns:
//   - Register, unary: a TaskManager's registration (the frame of a
//     protocol.TaskManagerRegistration, plus its data address and build id)
//     answered by the JobManager's leader epoch and a new session id, or
//     refused (ServerConfig.Admit; the client returns ErrRefused and does
//     not retry);
//   - Session, a bidirectional stream per registered TaskManager carrying
//     both one-way gateways in order: every message is one of
//     internal/protocol's frames (protocol.AppendEncode's output) in an
//     Envelope{epoch, session, seq, frame}, so this transport, the loopback
//     (protocol/loopback.go) and a simulator carry the same bytes, and the
//     receiver gets a fresh decoded copy, as the loopback's does;
//   - Server (the JobManager's side): hands each TaskManager that opens its
//     session to ServerConfig.Connected as a ServerSession, a
//     protocol.TaskManagerGateway, and delivers what TaskManagers send to
//     ServerConfig.JobManager;
//   - Connect (the TaskManager's side): registers with bounded, jittered
//     exponential backoff (Backoff: Flink's registration timeouts; kept
//     here rather than driven by heartbeat.Member, which the node may do
//     instead by calling Connect once per attempt) and returns a
//     ClientSession, a protocol.JobManagerGateway, delivering the
//     JobManager's calls to ClientConfig.TaskManager;
//   - fencing (Fence.Check, decision 7): a message of another epoch or
//     session is dropped before it is decoded, counted (Dropped) and
//     logged;
//   - the end of a session, reported once (SessionEnd: the cause, and
//     whether the peer ended it) after its last delivery, so that the
//     caller can call JobManager.TaskManagerLost; this package calls
//     nothing of the JobManager's;
//   - the sockets: TCP keepalive and TCP_USER_TIMEOUT on every connection
//     dialed (Dialer) and accepted (Listen), decision 23.
//
// # Invariants
//
//   - The messages one goroutine sends on a session are delivered in its
//     order, each once; seq numbers each direction from 1, and a gap, an
//     undecodable frame, or a message of a kind the receiving side does
//     not receive ends the session (this side's end: ByPeer false).
//   - Gateway calls never block on the network: a call encodes and
//     queues its message, and one writer goroutine per session writes the
//     queue. The queue is bounded (rpc.send-queue.messages and .bytes); the
//     message that exceeds a bound, or a message larger than
//     rpc.max-message-size, ends the session with an error naming the
//     setting (Send returns the error instead). A receiver refuses a
//     message above its own rpc.max-message-size, which ends the session.
//   - A session is never resumed: after its end a TaskManager registers
//     again, under the same id, and the new registration ends any session
//     still open under that id.
//   - ByPeer is true only when the peer's side ended the session (closed
//     its stream, its connection closed or was reset, or it registered
//     again): then the peer knows it is over. This side's timeouts
//     (keepalive, TCP_USER_TIMEOUT), limits and Close give false.
//
// # Where it departs from the design record
//
//   - RegisterReply is a protobuf message {epoch, session} rather than
//     the protocol kind RegistrationReply of decision 8, and the data
//     address and build id travel as protobuf fields beside the
//     registration's frame: the epoch and session are the envelope's own
//     fields, and protocol.TaskManagerRegistration does not carry the
//     build id yet. It carries the data address since protocol version 4
//     (the JobManager reads it there), so the data_address field is
//     redundant; both fields go when the registration carries the build
//     id too.
//   - A refusal is a Connect error (FAILED_PRECONDITION) with the reason
//     as text, not a field of the reply.
//
// It imports protocol, Connect, protobuf and the standard library (plus
// golang.org/x/sys/unix for TCP_USER_TIMEOUT), and nothing of the
// runtime, the JobManager or the TaskManager (internal/layering).
package rpc
