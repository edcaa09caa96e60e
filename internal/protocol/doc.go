// Package protocol holds the messages between the JobManager and the
// TaskManagers (messages.go, calls.go, heartbeat.go, and the checkpoint
// handles they carry in handles.go), the two gateway interfaces they travel through
// (gateway.go), their encoding (encoding.go) and the loopback transport of
// the local cluster (loopback.go). Both sides import this package; neither
// imports the other.
//
// Its rules:
//   - It imports only the standard library, so that anything may speak the
//     protocol (a TaskManager process, a tool) without the runtime, the
//     state backends or the storage drivers.
//   - Messages are plain data: no pointers to live objects, no closures, no
//     channels, no Go errors (a failure travels as Failure text).
//   - Every message encodes: each message type has a Kind and an encoding
//     into a versioned frame, and the tests round-trip random values of
//     every kind. A test lists the package's exported struct types from its
//     source and fails on one that is neither a message, a part of one, nor
//     marked as no message, so a type nobody encodes cannot be added.
//   - Decoding is bounded and never panics (FuzzDecode); its errors name
//     the message kind and the field.
package protocol
