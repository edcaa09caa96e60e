package wire

import "fmt"

// Every frame is
//
//	length u32 | type u8 | body
//
// little-endian, where length counts the body's bytes only (not itself, not
// the type byte). The bodies, all fields fixed-width little-endian, strings
// as a length prefix and the bytes:
//
//	HELLO              magic "WEIR" | version u16 | TaskManager id8 | session id8 | epoch u64 | build id8
//	PARTITION_REQUEST  channel u32 | job id8 | edge u32 | producer u32 | attempt u32 | subpartition u32 | credit u32
//	BUFFER             channel u32 | sequence u32 | backlog u32 | kind u8 | flags u8 | payload
//	ADD_CREDIT         count u32 | count x (channel u32 | credit u32)
//	CANCEL_REQUEST     channel u32
//	ERROR              channel u32 (AllChannels: the connection) | text16
//
// id8 is a u8 length and up to MaxIDLen bytes; text16 a u16 length and up
// to MaxTextLen bytes. A BUFFER's payload is the rest of the frame: a
// network.Buffer's Data, byte for byte.

// Version is the wire version HELLO carries. Both ends must speak the same
// one: frames never cross between versions (a cluster runs one build).
const Version = 1

// Magic opens every HELLO, so a peer that is not a Weir TaskManager is
// recognized by its first bytes.
const Magic = "WEIR"

// Type is a frame's type byte. The numbers are part of the encoding: never
// reuse or renumber one.
type Type uint8

// The frame types.
const (
	TypeHello            Type = 1
	TypePartitionRequest Type = 2
	TypeBuffer           Type = 3
	TypeAddCredit        Type = 4
	TypeCancelRequest    Type = 5
	TypeError            Type = 6
)

var typeNames = [...]string{
	TypeHello: "HELLO", TypePartitionRequest: "PARTITION_REQUEST", TypeBuffer: "BUFFER",
	TypeAddCredit: "ADD_CREDIT", TypeCancelRequest: "CANCEL_REQUEST", TypeError: "ERROR",
}

// String is the frame type's name as the design record spells it.
func (t Type) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Sizes and bounds.
const (
	// HeaderSize is the length and the type byte every frame starts with.
	HeaderSize = 5
	// BufferHeaderSize is a BUFFER frame's bytes before its payload:
	// the frame header, channel, sequence, backlog, kind and flags.
	BufferHeaderSize = HeaderSize + bufferFixed
	// MaxIDLen bounds the ids: TaskManager, session, build and job ids.
	MaxIDLen = 255
	// MaxTextLen bounds an ERROR's text; AppendError cuts longer texts.
	MaxTextLen = 8 << 10
	// MaxCredits bounds the (channel, credit) pairs of one ADD_CREDIT
	// (512 KiB of body); a sender splits larger batches.
	MaxCredits = 1 << 16
	// MinBufferSize and MaxBufferSize bound the network buffer size a
	// Decoder accepts: network.NewBufferPool's smallest buffer, and the
	// largest --buffer-size (internal/cli) allows.
	MinBufferSize = 64
	MaxBufferSize = 64 << 20
	// MaxEventSize bounds the payload of an event buffer (every kind but
	// data). The largest event today is a barrier, 26 bytes
	// (network.NewBarrier); events are allocated by the receiver outside
	// its pool, so they are held to a small bound of their own.
	MaxEventSize = 256
	// AllChannels is the channel of an ERROR about the whole connection.
	AllChannels = ^uint32(0)
)

// The network.Kind values the wire needs. A BUFFER's kind byte is a
// network.Kind; internal/network's tests check these agree with it.
const (
	// KindData is network.KindData: framed records in a pool buffer,
	// bounded by the buffer size and costing one credit.
	KindData = 0
	// NumKinds is the number of network.Kind values; a kind byte at or
	// above it is refused.
	NumKinds = 7
)

// Body sizes.
const (
	bufferFixed  = 4 + 4 + 4 + 1 + 1
	helloFixed   = 4 + 2 + 1 + 1 + 8 + 1
	helloMax     = helloFixed + 3*MaxIDLen
	requestFixed = 4 + 1 + 5*4
	requestMax   = requestFixed + MaxIDLen
	creditPair   = 8
	creditsMax   = 4 + MaxCredits*creditPair
	errorFixed   = 4 + 2
	errorMax     = errorFixed + MaxTextLen
)

// flagPriority marks a priority event (an unaligned barrier), which
// overtakes data queued before it. No other flag bit is defined.
const flagPriority = 1

// Hello is the first frame each way on a connection. The receiver compares
// it with what it expects (Hello.Check) and answers a mismatch with ERROR.
// The wire version is not a field: Encode writes Version and the Decoder
// refuses any other.
type Hello struct {
	// TaskManager is the sender's stable TaskManager id.
	TaskManager string
	// Session is the sender's control-plane session id, Epoch the
	// JobManager's leader epoch: a frame of another session or epoch is a
	// stale peer.
	Session string
	Epoch   uint64
	// BuildID is the sender's build (VCS revision and executable hash).
	BuildID string
}

// Check reports how h, a peer's HELLO, differs from want in what both
// ends of a connection must share (session, epoch, build), naming both
// values; nil when they agree. The TaskManager id is the peer's own and is
// not compared.
func (h Hello) Check(want Hello) error {
	switch {
	case h.BuildID != want.BuildID:
		return fmt.Errorf("wire: HELLO from TaskManager %q: build %q, this TaskManager runs build %q (every process of a cluster must run the same binary)", h.TaskManager, h.BuildID, want.BuildID)
	case h.Epoch != want.Epoch:
		return fmt.Errorf("wire: HELLO from TaskManager %q: leader epoch %d, this TaskManager is at epoch %d", h.TaskManager, h.Epoch, want.Epoch)
	case h.Session != want.Session:
		return fmt.Errorf("wire: HELLO from TaskManager %q: session %q, this TaskManager expects session %q", h.TaskManager, h.Session, want.Session)
	}
	return nil
}

// PartitionKey names one producer subtask's result partition on one edge.
// Its fields are network.PartitionKey's, so the two convert into each
// other (a Go conversion; internal/network's tests hold them identical).
// On the wire Edge, Producer and Attempt are u32: 0 to MaxUint32.
type PartitionKey struct {
	Job      string
	Edge     int
	Producer int
	Attempt  int
}

// PartitionRequest asks the producer's TaskManager to send one
// subpartition of a partition on Channel, a receiver-chosen id dense per
// connection, with Credit initial credits (the channel's exclusive buffers).
type PartitionRequest struct {
	Channel      uint32
	Key          PartitionKey
	Subpartition uint32
	Credit       uint32
}

// BufferHeader is a BUFFER frame without its payload.
type BufferHeader struct {
	Channel uint32
	// Sequence numbers a channel's buffers from 0, wrapping at 2^32 (see
	// Sequence).
	Sequence uint32
	// Backlog is the buffers the sender's subpartition holds for lack of
	// credit after this one.
	Backlog uint32
	// Kind is the buffer's network.Kind.
	Kind uint8
	// Priority marks an event that overtakes queued data; only events may
	// have it.
	Priority bool
	// Len is the payload's length. The encoder takes it from the payload;
	// the decoder fills it in.
	Len int
}

// Credit grants Credit more buffers' worth of credit on Channel.
type Credit struct {
	Channel uint32
	Credit  uint32
}

// ErrorFrame is an ERROR frame: the sender failed Channel, or with
// AllChannels the whole connection, for Text's reason.
type ErrorFrame struct {
	Channel uint32
	Text    string
}
