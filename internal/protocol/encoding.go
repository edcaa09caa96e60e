package protocol

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// The encoding of a message is one frame:
//
//	version byte (Version) | kind byte (Kind) | body
//
// The body is the message's fields in declaration order: integers as
// varints (signed ones zigzag), bools and uint8 fields as one byte, strings
// as a uvarint length and the bytes, structs inline, pointers as a presence
// byte (0 or 1) and the value, and byte slices and slices as a uvarint
// count plus one (0 for nil, so nil and empty stay apart) and the elements.
// A frame holds exactly one message: no bytes may follow it.
//
// Decoding checks every length against the bytes left before it allocates,
// never panics on any input, and names the message kind and the field in
// its errors. A frame of a version this build does not know is refused.
// Adding a field to a message, or a message, changes the encoding: bump
// Version when frames must cross between builds of different versions.

// Version is the version of the encoding, the first byte of every frame.
// Version 2: Deployment carries its Allocation, ReleaseJob its Attempt.
// Version 3: ReleaseJob carries Ended; RegisterJob.
// Version 4: TaskManagerRegistration carries DataAddress; DeployAttempt.
const Version = 4

// MaxFrameSize bounds an encoded message. Control messages are far smaller;
// the largest are deployments that carry a subtask's operator state.
const MaxFrameSize = 256 << 20

// maxFrameSize is MaxFrameSize; tests lower it.
var maxFrameSize = MaxFrameSize

// Message is a value of one of the message types: it crosses the boundary
// between the JobManager and the TaskManagers as a frame (Encode, Decode).
type Message interface {
	// Kind is the message's type on the wire.
	Kind() Kind
}

// Kind names a message type on the wire. The numbers are part of the
// encoding: never reuse or renumber one.
type Kind uint8

// The message kinds.
const (
	KindDeployment Kind = 1
	// 2 was SubmitTaskReply (SubmitTask is one-way since the JobManager
	// stopped calling gateways under its lock): retired, never reuse it.
	KindCancelTask        Kind = 3
	KindTriggerCheckpoint Kind = 4
	KindNotifyCheckpoint  Kind = 5
	KindOperatorEvent     Kind = 6
	// 7 and 8 were TaskStatsRequest/Reply (stats are pushed now): retired.
	KindReleaseJob Kind = 9
	// 10 and 11 were NetworkMemoryRequest/Reply (the registration carries
	// the budget now): retired.
	KindTaskManagerRegistration Kind = 12
	KindTaskStateUpdate         Kind = 13
	KindAcknowledgeCheckpoint   Kind = 14
	KindDeclineCheckpoint       Kind = 15
	KindSourceEnded             Kind = 16
	KindTaskStatsReport         Kind = 17
	// 18 is reserved for RegistrationReply (internal/rpc's RegisterReply
	// stands for it now).
	KindRegisterJob    Kind = 19
	KindDeployAttempt  Kind = 20
	KindHeartbeat      Kind = 21
	KindHeartbeatReply Kind = 22
	KindDeregister     Kind = 23
)

var kindNames = [...]string{
	KindDeployment: "Deployment", KindCancelTask: "CancelTask",
	KindTriggerCheckpoint: "TriggerCheckpoint", KindNotifyCheckpoint: "NotifyCheckpoint", KindOperatorEvent: "OperatorEvent",
	KindReleaseJob: "ReleaseJob", KindTaskStatsReport: "TaskStatsReport",
	KindTaskManagerRegistration: "TaskManagerRegistration", KindTaskStateUpdate: "TaskStateUpdate",
	KindAcknowledgeCheckpoint: "AcknowledgeCheckpoint", KindDeclineCheckpoint: "DeclineCheckpoint", KindSourceEnded: "SourceEnded",
	KindRegisterJob: "RegisterJob", KindDeployAttempt: "DeployAttempt",
	KindHeartbeat: "Heartbeat", KindHeartbeatReply: "HeartbeatReply", KindDeregister: "Deregister",
}

// String is the name of the message type of kind k.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("unknown kind %d", uint8(k))
}

func (Deployment) Kind() Kind              { return KindDeployment }
func (CancelTask) Kind() Kind              { return KindCancelTask }
func (TriggerCheckpoint) Kind() Kind       { return KindTriggerCheckpoint }
func (NotifyCheckpoint) Kind() Kind        { return KindNotifyCheckpoint }
func (OperatorEvent) Kind() Kind           { return KindOperatorEvent }
func (ReleaseJob) Kind() Kind              { return KindReleaseJob }
func (TaskManagerRegistration) Kind() Kind { return KindTaskManagerRegistration }
func (TaskStateUpdate) Kind() Kind         { return KindTaskStateUpdate }
func (AcknowledgeCheckpoint) Kind() Kind   { return KindAcknowledgeCheckpoint }
func (DeclineCheckpoint) Kind() Kind       { return KindDeclineCheckpoint }
func (SourceEnded) Kind() Kind             { return KindSourceEnded }
func (TaskStatsReport) Kind() Kind         { return KindTaskStatsReport }
func (RegisterJob) Kind() Kind             { return KindRegisterJob }
func (DeployAttempt) Kind() Kind           { return KindDeployAttempt }
func (Heartbeat) Kind() Kind               { return KindHeartbeat }
func (HeartbeatReply) Kind() Kind          { return KindHeartbeatReply }
func (Deregister) Kind() Kind              { return KindDeregister }

// Encode returns the frame of m.
func Encode(m Message) ([]byte, error) { return AppendEncode(nil, m) }

// AppendEncode appends the frame of m to dst. On error dst is returned
// unchanged.
func AppendEncode(dst []byte, m Message) ([]byte, error) {
	if m == nil {
		return dst, fmt.Errorf("protocol: encoding a nil message")
	}
	w := writer{b: append(dst, Version, byte(m.Kind()))}
	switch m := m.(type) {
	case Deployment:
		w.deployment(m)
	case CancelTask:
		w.exec(m.Exec)
	case TriggerCheckpoint:
		w.exec(m.Exec)
		w.i64(m.ID)
		w.i64(m.Timestamp)
		w.options(m.Options)
	case NotifyCheckpoint:
		w.exec(m.Exec)
		w.i64(m.ID)
		w.bools(m.Complete, m.Final, m.Terminate)
	case OperatorEvent:
		w.exec(m.Exec)
		w.str(m.OperatorID)
		w.bytes(m.Payload)
	case TaskStatsReport:
		w.str(m.TaskManager)
		w.executionStats(m.Tasks)
	case ReleaseJob:
		w.str(m.JobID)
		w.int(m.Attempt)
		w.bools(m.Ended)
	case RegisterJob:
		w.registerJob(m)
	case DeployAttempt:
		w.str(m.JobID)
		w.int(m.Attempt)
		w.count(len(m.Slots), m.Slots == nil)
		for _, p := range m.Slots {
			w.str(p.TaskManager)
			w.str(p.DataAddress)
			w.allocation(p.Allocation)
		}
	case TaskManagerRegistration:
		w.str(m.ID)
		w.int(m.Slots)
		w.i64(m.NetworkMemory)
		w.str(m.DataAddress)
	case TaskStateUpdate:
		w.exec(m.Exec)
		w.str(string(m.State))
		w.failure(m.Failure)
	case AcknowledgeCheckpoint:
		w.ack(m)
	case DeclineCheckpoint:
		w.exec(m.Exec)
		w.i64(m.ID)
		w.str(m.Reason)
		w.bools(m.Counts)
	case SourceEnded:
		w.exec(m.Exec)
	case Heartbeat:
		w.heartbeat(m)
	case HeartbeatReply:
		w.u64(m.Acked)
		w.count(len(m.Held), m.Held == nil)
		for _, a := range m.Held {
			w.allocation(a)
		}
	case Deregister:
		w.str(m.TaskManager)
		w.str(m.Reason)
	default:
		return dst, fmt.Errorf("protocol: message type %T (kind %d) has no encoding", m, uint8(m.Kind()))
	}
	if n := len(w.b) - len(dst); n > maxFrameSize {
		return dst, fmt.Errorf("protocol: encoding %s: %d bytes, more than the %d a frame may hold (MaxFrameSize)", m.Kind(), n, maxFrameSize)
	}
	return w.b, nil
}

// Decode returns the message of frame b. The message shares no memory with b.
func Decode(b []byte) (Message, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("protocol: a frame of %d bytes (want a version and a kind byte at least)", len(b))
	}
	k := Kind(b[1])
	if b[0] != Version {
		return nil, fmt.Errorf("protocol: decoding %s: the frame is of version %d, this build reads version %d", k, b[0], Version)
	}
	if len(b) > maxFrameSize {
		return nil, fmt.Errorf("protocol: decoding %s: a frame of %d bytes, more than the %d a frame may hold (MaxFrameSize)", k, len(b), maxFrameSize)
	}
	r := reader{b: b, off: 2, kind: k}
	var m Message
	switch k {
	case KindDeployment:
		m = r.deployment()
	case KindCancelTask:
		m = CancelTask{Exec: r.exec("Exec")}
	case KindTriggerCheckpoint:
		m = TriggerCheckpoint{Exec: r.exec("Exec"), ID: r.i64("ID"), Timestamp: r.i64("Timestamp"), Options: r.options("Options")}
	case KindNotifyCheckpoint:
		m = NotifyCheckpoint{Exec: r.exec("Exec"), ID: r.i64("ID"), Complete: r.bool("Complete"), Final: r.bool("Final"), Terminate: r.bool("Terminate")}
	case KindOperatorEvent:
		m = OperatorEvent{Exec: r.exec("Exec"), OperatorID: r.str("OperatorID"), Payload: r.bytes("Payload")}
	case KindTaskStatsReport:
		m = r.statsReport()
	case KindReleaseJob:
		m = ReleaseJob{JobID: r.str("JobID"), Attempt: r.int("Attempt"), Ended: r.bool("Ended")}
	case KindRegisterJob:
		m = r.registerJob()
	case KindDeployAttempt:
		m = r.deployAttempt()
	case KindTaskManagerRegistration:
		m = TaskManagerRegistration{ID: r.str("ID"), Slots: r.int("Slots"), NetworkMemory: r.i64("NetworkMemory"), DataAddress: r.str("DataAddress")}
	case KindTaskStateUpdate:
		m = TaskStateUpdate{Exec: r.exec("Exec"), State: TaskState(r.str("State")), Failure: r.failure("Failure")}
	case KindAcknowledgeCheckpoint:
		m = r.ack()
	case KindDeclineCheckpoint:
		m = DeclineCheckpoint{Exec: r.exec("Exec"), ID: r.i64("ID"), Reason: r.str("Reason"), Counts: r.bool("Counts")}
	case KindSourceEnded:
		m = SourceEnded{Exec: r.exec("Exec")}
	case KindHeartbeat:
		m = r.heartbeat()
	case KindHeartbeatReply:
		m = r.heartbeatReply()
	case KindDeregister:
		m = Deregister{TaskManager: r.str("TaskManager"), Reason: r.str("Reason")}
	default:
		return nil, fmt.Errorf("protocol: decoding a frame of %s (this build knows kinds 1 to %d)", k, len(kindNames)-1)
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.off != len(b) {
		return nil, fmt.Errorf("protocol: decoding %s: %d bytes follow the message in its frame", k, len(b)-r.off)
	}
	return m, nil
}

// writer appends a message's fields.
type writer struct{ b []byte }

func (w *writer) u64(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *writer) i64(v int64)  { w.b = binary.AppendVarint(w.b, v) }
func (w *writer) int(v int)    { w.b = binary.AppendVarint(w.b, int64(v)) }
func (w *writer) str(s string) {
	w.u64(uint64(len(s)))
	w.b = append(w.b, s...)
}

// count writes a slice's length: 0 for nil, else the length plus one.
func (w *writer) count(n int, isNil bool) {
	if isNil {
		w.u64(0)
		return
	}
	w.u64(uint64(n) + 1)
}

func (w *writer) bytes(b []byte) {
	w.count(len(b), b == nil)
	w.b = append(w.b, b...)
}

func (w *writer) bools(bs ...bool) {
	for _, v := range bs {
		if v {
			w.b = append(w.b, 1)
		} else {
			w.b = append(w.b, 0)
		}
	}
}

func (w *writer) present(p bool) { w.bools(p) }

func (w *writer) strs(s []string) {
	w.count(len(s), s == nil)
	for _, v := range s {
		w.str(v)
	}
}

func (w *writer) exec(e ExecutionID) {
	w.str(e.Job)
	w.int(e.Vertex)
	w.int(e.Subtask)
	w.int(e.Attempt)
}

func (w *writer) allocation(a AllocationID) {
	w.i64(a.Epoch)
	w.str(a.Job)
	w.int(a.Attempt)
	w.int(a.Slot)
}

func (w *writer) deployment(d Deployment) {
	w.exec(d.Exec)
	w.int(d.Slot)
	w.allocation(d.Allocation)
	w.b = append(w.b, d.KeyHash)
	w.present(d.Restore != nil)
	if r := d.Restore; r != nil {
		w.str(r.StorageURL)
		w.str(r.JobID)
		w.i64(r.CheckpointID)
		w.count(len(r.Operators), r.Operators == nil)
		for i := range r.Operators {
			op := &r.Operators[i]
			w.str(op.OperatorID)
			w.keyed(op.Keyed)
			w.bytes(op.Operator)
			w.objects(op.InputChannels)
			w.objects(op.OutputChannels)
		}
	}
}

func (w *writer) registerJob(j RegisterJob) {
	w.str(j.JobID)
	w.str(j.Name)
	w.str(j.Program)
	w.strs(j.Args)
	w.str(j.Fingerprint)
	w.int(j.MaxParallelism)
	w.bools(j.Batch)
	w.i64(j.BufferTimeout)
	w.int(j.BufferSize)
	w.int(j.BuffersPerChannel)
	w.int(j.FloatingBuffers)
	w.str(j.StateBackend)
	w.present(j.Checkpoints != nil)
	if c := j.Checkpoints; c != nil {
		w.str(c.StorageURL)
		w.i64(c.WriteMemory)
		w.bools(c.AtLeastOnce, c.Incremental)
		w.i64(c.Interval)
		w.i64(c.ChannelStateMemory)
		w.str(c.Lineage)
		w.bools(c.SavepointsOnly)
		w.str(c.Probe)
		w.str(c.ProbeToken)
	}
}

func (w *writer) object(h ObjectHandle) {
	w.str(h.Key)
	w.i64(h.Size)
	w.u64(uint64(h.CRC))
}

func (w *writer) objects(hs []ObjectHandle) {
	w.count(len(hs), hs == nil)
	for _, h := range hs {
		w.object(h)
	}
}

func (w *writer) objectPtr(h *ObjectHandle) {
	w.present(h != nil)
	if h != nil {
		w.object(*h)
	}
}

func (w *writer) keyed(hs []KeyedHandle) {
	w.count(len(hs), hs == nil)
	for i := range hs {
		h := &hs[i]
		w.str(h.Kind)
		w.int(h.KeyGroupStart)
		w.int(h.KeyGroupEnd)
		w.object(h.Object)
		w.count(len(h.Files), h.Files == nil)
		for _, f := range h.Files {
			w.str(f.Name)
			w.object(f.Object)
			w.bools(f.Shared)
		}
		w.objectPtr(h.Timers)
	}
}

func (w *writer) options(o CheckpointOptions) {
	w.b = append(w.b, byte(o.Kind))
	w.bools(o.Unaligned)
	w.i64(o.AlignedTimeout)
	w.bools(o.AtLeastOnce, o.Native, o.Stop, o.Drain)
}

func (w *writer) failure(f *Failure) {
	w.present(f != nil)
	if f != nil {
		w.str(f.Message)
		w.str(f.Operator)
		w.str(f.Task)
		w.str(f.Stack)
		w.bools(f.Permanent)
	}
}

func (w *writer) stats(s TaskStats) {
	for _, v := range [...]int64{s.RecordsIn, s.RecordsOut, s.BytesIn, s.BytesOut, s.BackPressuredNanos, s.IdleNanos, s.BusyNanos,
		s.InputWatermark, s.OutputWatermark} {
		w.i64(v)
	}
	w.bools(s.OutputIdle)
	w.count(len(s.Operators), s.Operators == nil)
	for _, m := range s.Operators {
		w.str(m.Operator)
		w.str(m.Name)
		w.i64(m.Value)
	}
}

func (w *writer) executionStats(ts []ExecutionStats) {
	w.count(len(ts), ts == nil)
	for _, t := range ts {
		w.exec(t.Exec)
		w.stats(t.Stats)
	}
}

func (w *writer) heartbeat(h Heartbeat) {
	w.str(h.TaskManager)
	w.u64(h.Seq)
	w.u64(h.Processed)
	w.count(len(h.Executions), h.Executions == nil)
	for _, e := range h.Executions {
		w.exec(e.Exec)
		w.allocation(e.Allocation)
		w.str(string(e.State))
	}
	w.i64(h.FreeNetworkMemory)
	w.i64(h.HeapStateUsed)
	w.executionStats(h.Stats)
}

func (w *writer) ack(a AcknowledgeCheckpoint) {
	w.exec(a.Exec)
	w.i64(a.ID)
	w.count(len(a.Operators), a.Operators == nil)
	for i := range a.Operators {
		op := &a.Operators[i]
		w.str(op.OperatorID)
		st := &op.State
		w.int(st.Subtask)
		w.keyed(st.Keyed)
		w.objectPtr(st.Operator)
		w.objects(st.InputChannels)
		w.objects(st.OutputChannels)
		w.bytes(st.Inline)
		w.strs(op.Shared)
	}
	m := a.Metrics
	w.i64(m.SyncMillis)
	w.i64(m.AsyncMillis)
	w.i64(m.AlignmentMillis)
	w.i64(m.Bytes)
	w.i64(m.PersistedBytes)
	w.bools(m.Unaligned)
	w.i64(m.AckMillis)
	w.bools(m.Finished)
}

// reader reads a frame's fields. The first error sticks: later reads
// return zero values and consume nothing, so the decoders read straight
// through and Decode checks err once.
type reader struct {
	b    []byte
	off  int
	kind Kind
	err  error
	// path is the struct fields being read, outermost first, for errors.
	path  [8]string
	depth int
}

// enter and leave bracket the fields of a nested struct named field.
func (r *reader) enter(field string) {
	if r.depth < len(r.path) {
		r.path[r.depth] = field
	}
	r.depth++
}

func (r *reader) leave() { r.depth-- }

func (r *reader) fail(field, format string, args ...any) {
	if r.err != nil {
		return
	}
	parts := append(r.path[:min(r.depth, len(r.path))], field)
	r.err = fmt.Errorf("protocol: decoding %s: field %s: %s", r.kind, strings.Join(parts, "."), fmt.Sprintf(format, args...))
}

func (r *reader) u64(field string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail(field, "a truncated or overlong varint at byte %d", r.off)
		return 0
	}
	r.off += n
	return v
}

func (r *reader) i64(field string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.fail(field, "a truncated or overlong varint at byte %d", r.off)
		return 0
	}
	r.off += n
	return v
}

func (r *reader) int(field string) int {
	v := r.i64(field)
	if int64(int(v)) != v {
		r.fail(field, "%d does not fit an int", v)
		return 0
	}
	return int(v)
}

func (r *reader) u32(field string) uint32 {
	v := r.u64(field)
	if v > math.MaxUint32 {
		r.fail(field, "%d does not fit 32 bits", v)
		return 0
	}
	return uint32(v)
}

func (r *reader) byte(field string) byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail(field, "the frame ends at byte %d", r.off)
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *reader) bool(field string) bool {
	switch v := r.byte(field); v {
	case 0:
		return false
	case 1:
		return true
	default:
		r.fail(field, "bool byte %d (want 0 or 1)", v)
		return false
	}
}

// length checks that the frame has v elements of at least minSize bytes
// left, so that a corrupt length cannot make the decoder allocate more
// than a small multiple of the frame.
func (r *reader) length(field string, v, minSize uint64) int {
	if left := uint64(len(r.b) - r.off); v > left/minSize {
		if minSize == 1 {
			r.fail(field, "a length of %d with %d bytes left", v, left)
		} else {
			r.fail(field, "%d elements of at least %d bytes each with %d bytes left", v, minSize, left)
		}
		return 0
	}
	return int(v)
}

func (r *reader) str(field string) string {
	n := r.length(field, r.u64(field), 1)
	if r.err != nil {
		return ""
	}
	s := string(r.b[r.off : r.off+n])
	r.off += n
	return s
}

// count reads the length of a slice whose elements encode to minSize bytes
// at least (see writer.count); ok is false for a nil slice or an error.
func (r *reader) count(field string, minSize uint64) (n int, ok bool) {
	v := r.u64(field)
	if v == 0 || r.err != nil {
		return 0, false
	}
	return r.length(field, v-1, minSize), r.err == nil
}

// The fewest bytes an element of each slice type encodes to.
const (
	minObject           = 3 // Key, Size, CRC
	minKeyed            = 8 // Kind, KeyGroupStart, KeyGroupEnd, Object (3), Files, Timers
	minNativeFile       = 5 // Name, Object (3), Shared
	minOperatorRestore  = 5 // OperatorID, Keyed, Operator, InputChannels, OutputChannels
	minOperatorSnapshot = 8 // OperatorID, Subtask, Keyed, Operator, InputChannels, OutputChannels, Inline, Shared
	minOperatorMetric   = 3 // Operator, Name, Value
	// minExecutionStats: Exec (4 varints), Stats (9 varints, a bool byte, a count)
	minExecutionStats = 15
	minAllocation     = 4 // Epoch, Job, Attempt, Slot
	// minExecutionReport: Exec (4), Allocation (4), State
	minExecutionReport = 9
	minSlotPlacement   = 6 // TaskManager, DataAddress, Allocation (4 varints)
)

func (r *reader) bytes(field string) []byte {
	n, ok := r.count(field, 1)
	if !ok {
		return nil
	}
	b := make([]byte, n)
	r.off += copy(b, r.b[r.off:])
	return b
}

func (r *reader) strs(field string) []string {
	n, ok := r.count(field, 1)
	if !ok {
		return nil
	}
	s := make([]string, n)
	for i := range s {
		s[i] = r.str(field)
	}
	return s
}

func (r *reader) exec(field string) ExecutionID {
	r.enter(field)
	defer r.leave()
	return ExecutionID{Job: r.str("Job"), Vertex: r.int("Vertex"), Subtask: r.int("Subtask"), Attempt: r.int("Attempt")}
}

func (r *reader) allocation(field string) AllocationID {
	r.enter(field)
	defer r.leave()
	return AllocationID{Epoch: r.i64("Epoch"), Job: r.str("Job"), Attempt: r.int("Attempt"), Slot: r.int("Slot")}
}

func (r *reader) registerJob() RegisterJob {
	j := RegisterJob{JobID: r.str("JobID"), Name: r.str("Name"), Program: r.str("Program"), Args: r.strs("Args"),
		Fingerprint: r.str("Fingerprint"), MaxParallelism: r.int("MaxParallelism"), Batch: r.bool("Batch"),
		BufferTimeout: r.i64("BufferTimeout"), BufferSize: r.int("BufferSize"), BuffersPerChannel: r.int("BuffersPerChannel"),
		FloatingBuffers: r.int("FloatingBuffers"), StateBackend: r.str("StateBackend")}
	if !r.bool("Checkpoints") {
		return j
	}
	r.enter("Checkpoints")
	defer r.leave()
	j.Checkpoints = &JobCheckpoints{StorageURL: r.str("StorageURL"), WriteMemory: r.i64("WriteMemory"), AtLeastOnce: r.bool("AtLeastOnce"),
		Incremental: r.bool("Incremental"), Interval: r.i64("Interval"), ChannelStateMemory: r.i64("ChannelStateMemory"),
		Lineage: r.str("Lineage"), SavepointsOnly: r.bool("SavepointsOnly"), Probe: r.str("Probe"), ProbeToken: r.str("ProbeToken")}
	return j
}

func (r *reader) deployAttempt() DeployAttempt {
	m := DeployAttempt{JobID: r.str("JobID"), Attempt: r.int("Attempt")}
	if n, ok := r.count("Slots", minSlotPlacement); ok {
		m.Slots = make([]SlotPlacement, n)
		r.enter("Slots")
		for i := range m.Slots {
			m.Slots[i] = SlotPlacement{TaskManager: r.str("TaskManager"), DataAddress: r.str("DataAddress"), Allocation: r.allocation("Allocation")}
		}
		r.leave()
	}
	return m
}

func (r *reader) deployment() Deployment {
	d := Deployment{Exec: r.exec("Exec"), Slot: r.int("Slot"), Allocation: r.allocation("Allocation"), KeyHash: r.byte("KeyHash")}
	if !r.bool("Restore") {
		return d
	}
	r.enter("Restore")
	defer r.leave()
	tr := &TaskRestore{StorageURL: r.str("StorageURL"), JobID: r.str("JobID"), CheckpointID: r.i64("CheckpointID")}
	if n, ok := r.count("Operators", minOperatorRestore); ok {
		tr.Operators = make([]OperatorRestore, n)
		r.enter("Operators")
		for i := range tr.Operators {
			tr.Operators[i] = OperatorRestore{OperatorID: r.str("OperatorID"), Keyed: r.keyed("Keyed"), Operator: r.bytes("Operator"),
				InputChannels: r.objects("InputChannels"), OutputChannels: r.objects("OutputChannels")}
		}
		r.leave()
	}
	d.Restore = tr
	return d
}

func (r *reader) object(field string) ObjectHandle {
	r.enter(field)
	defer r.leave()
	return ObjectHandle{Key: r.str("Key"), Size: r.i64("Size"), CRC: r.u32("CRC")}
}

func (r *reader) objects(field string) []ObjectHandle {
	n, ok := r.count(field, minObject)
	if !ok {
		return nil
	}
	hs := make([]ObjectHandle, n)
	for i := range hs {
		hs[i] = r.object(field)
	}
	return hs
}

func (r *reader) objectPtr(field string) *ObjectHandle {
	if !r.bool(field) {
		return nil
	}
	h := r.object(field)
	return &h
}

func (r *reader) keyed(field string) []KeyedHandle {
	n, ok := r.count(field, minKeyed)
	if !ok {
		return nil
	}
	r.enter(field)
	defer r.leave()
	hs := make([]KeyedHandle, n)
	for i := range hs {
		h := &hs[i]
		h.Kind, h.KeyGroupStart, h.KeyGroupEnd, h.Object = r.str("Kind"), r.int("KeyGroupStart"), r.int("KeyGroupEnd"), r.object("Object")
		if n, ok := r.count("Files", minNativeFile); ok {
			h.Files = make([]NativeFile, n)
			r.enter("Files")
			for j := range h.Files {
				h.Files[j] = NativeFile{Name: r.str("Name"), Object: r.object("Object"), Shared: r.bool("Shared")}
			}
			r.leave()
		}
		h.Timers = r.objectPtr("Timers")
	}
	return hs
}

func (r *reader) options(field string) CheckpointOptions {
	r.enter(field)
	defer r.leave()
	return CheckpointOptions{Kind: CheckpointKind(r.byte("Kind")), Unaligned: r.bool("Unaligned"), AlignedTimeout: r.i64("AlignedTimeout"),
		AtLeastOnce: r.bool("AtLeastOnce"), Native: r.bool("Native"), Stop: r.bool("Stop"), Drain: r.bool("Drain")}
}

func (r *reader) failure(field string) *Failure {
	if !r.bool(field) {
		return nil
	}
	r.enter(field)
	defer r.leave()
	return &Failure{Message: r.str("Message"), Operator: r.str("Operator"), Task: r.str("Task"), Stack: r.str("Stack"), Permanent: r.bool("Permanent")}
}

func (r *reader) stats(field string) TaskStats {
	r.enter(field)
	defer r.leave()
	s := TaskStats{RecordsIn: r.i64("RecordsIn"), RecordsOut: r.i64("RecordsOut"), BytesIn: r.i64("BytesIn"), BytesOut: r.i64("BytesOut"),
		BackPressuredNanos: r.i64("BackPressuredNanos"), IdleNanos: r.i64("IdleNanos"), BusyNanos: r.i64("BusyNanos"),
		InputWatermark: r.i64("InputWatermark"), OutputWatermark: r.i64("OutputWatermark"), OutputIdle: r.bool("OutputIdle")}
	if n, ok := r.count("Operators", minOperatorMetric); ok {
		s.Operators = make([]OperatorMetric, n)
		r.enter("Operators")
		for i := range s.Operators {
			s.Operators[i] = OperatorMetric{Operator: r.str("Operator"), Name: r.str("Name"), Value: r.i64("Value")}
		}
		r.leave()
	}
	return s
}

func (r *reader) statsReport() TaskStatsReport {
	return TaskStatsReport{TaskManager: r.str("TaskManager"), Tasks: r.executionStats("Tasks")}
}

func (r *reader) executionStats(field string) []ExecutionStats {
	n, ok := r.count(field, minExecutionStats)
	if !ok {
		return nil
	}
	ts := make([]ExecutionStats, n)
	r.enter(field)
	for i := range ts {
		ts[i] = ExecutionStats{Exec: r.exec("Exec"), Stats: r.stats("Stats")}
	}
	r.leave()
	return ts
}

func (r *reader) heartbeat() Heartbeat {
	h := Heartbeat{TaskManager: r.str("TaskManager"), Seq: r.u64("Seq"), Processed: r.u64("Processed")}
	if n, ok := r.count("Executions", minExecutionReport); ok {
		h.Executions = make([]ExecutionReport, n)
		r.enter("Executions")
		for i := range h.Executions {
			h.Executions[i] = ExecutionReport{Exec: r.exec("Exec"), Allocation: r.allocation("Allocation"), State: TaskState(r.str("State"))}
		}
		r.leave()
	}
	h.FreeNetworkMemory, h.HeapStateUsed = r.i64("FreeNetworkMemory"), r.i64("HeapStateUsed")
	h.Stats = r.executionStats("Stats")
	return h
}

func (r *reader) heartbeatReply() HeartbeatReply {
	m := HeartbeatReply{Acked: r.u64("Acked")}
	if n, ok := r.count("Held", minAllocation); ok {
		m.Held = make([]AllocationID, n)
		for i := range m.Held {
			m.Held[i] = r.allocation("Held")
		}
	}
	return m
}

func (r *reader) ack() AcknowledgeCheckpoint {
	a := AcknowledgeCheckpoint{Exec: r.exec("Exec"), ID: r.i64("ID")}
	if n, ok := r.count("Operators", minOperatorSnapshot); ok {
		a.Operators = make([]OperatorSnapshot, n)
		r.enter("Operators")
		for i := range a.Operators {
			op := &a.Operators[i]
			op.OperatorID = r.str("OperatorID")
			r.enter("State")
			op.State = SubtaskState{Subtask: r.int("Subtask"), Keyed: r.keyed("Keyed"), Operator: r.objectPtr("Operator"),
				InputChannels: r.objects("InputChannels"), OutputChannels: r.objects("OutputChannels"), Inline: r.bytes("Inline")}
			r.leave()
			op.Shared = r.strs("Shared")
		}
		r.leave()
	}
	r.enter("Metrics")
	a.Metrics = CheckpointMetrics{SyncMillis: r.i64("SyncMillis"), AsyncMillis: r.i64("AsyncMillis"), AlignmentMillis: r.i64("AlignmentMillis"),
		Bytes: r.i64("Bytes"), PersistedBytes: r.i64("PersistedBytes"), Unaligned: r.bool("Unaligned"), AckMillis: r.i64("AckMillis"),
		Finished: r.bool("Finished")}
	r.leave()
	return a
}
