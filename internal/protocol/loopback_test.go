package protocol

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
)

// fakeTM records what it receives.
type fakeTM struct{ got []any }

func (f *fakeTM) SubmitTask(d Deployment)               { f.got = append(f.got, d) }
func (f *fakeTM) CancelTask(e ExecutionID)              { f.got = append(f.got, e) }
func (f *fakeTM) TriggerCheckpoint(t TriggerCheckpoint) { f.got = append(f.got, t) }
func (f *fakeTM) NotifyCheckpoint(n NotifyCheckpoint)   { f.got = append(f.got, n) }
func (f *fakeTM) SendEvent(e OperatorEvent)             { f.got = append(f.got, e) }
func (f *fakeTM) ReleaseJob(r ReleaseJob)               { f.got = append(f.got, r) }
func (f *fakeTM) DeployAttempt(a DeployAttempt)         { f.got = append(f.got, a) }
func (f *fakeTM) RegisterJob(j RegisterJob)             { f.got = append(f.got, j) }
func (f *fakeTM) HeartbeatReply(r HeartbeatReply)       { f.got = append(f.got, r) }

type fakeJM struct{ got []any }

func (f *fakeJM) UpdateTaskState(u TaskStateUpdate)             { f.got = append(f.got, u) }
func (f *fakeJM) AcknowledgeCheckpoint(a AcknowledgeCheckpoint) { f.got = append(f.got, a) }
func (f *fakeJM) DeclineCheckpoint(d DeclineCheckpoint)         { f.got = append(f.got, d) }
func (f *fakeJM) SendEvent(e OperatorEvent)                     { f.got = append(f.got, e) }
func (f *fakeJM) SourceEnded(s SourceEnded)                     { f.got = append(f.got, s) }
func (f *fakeJM) ReportTaskStats(r TaskStatsReport)             { f.got = append(f.got, r) }
func (f *fakeJM) Heartbeat(h Heartbeat)                         { f.got = append(f.got, h) }
func (f *fakeJM) Deregister(d Deregister)                       { f.got = append(f.got, d) }

// memory returns the addresses of the pointers' targets and the slices'
// arrays that v holds.
func memory(v reflect.Value, out map[uintptr]bool) {
	switch v.Kind() {
	case reflect.Interface:
		if !v.IsNil() {
			memory(v.Elem(), out)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			out[v.Pointer()] = true
			memory(v.Elem(), out)
		}
	case reflect.Slice:
		if v.Cap() > 0 {
			out[v.Pointer()] = true
		}
		for i := range v.Len() {
			memory(v.Index(i), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			memory(v.Field(i), out)
		}
	}
}

// checkCopy fails unless got equals sent and shares no memory with it.
func checkCopy(t *testing.T, call string, sent, got any) {
	t.Helper()
	if !reflect.DeepEqual(got, sent) {
		t.Fatalf("%s: sent %#v, the other side got %#v", call, sent, got)
	}
	a, b := map[uintptr]bool{}, map[uintptr]bool{}
	memory(reflect.ValueOf(sent), a)
	memory(reflect.ValueOf(got), b)
	for p := range a {
		if b[p] {
			t.Fatalf("%s: the other side got memory of the sender's message (not a decoded copy)", call)
		}
	}
}

func random[M Message](r *rand.Rand) M {
	var m M
	testseed.Fill(r, reflect.ValueOf(&m).Elem())
	return m
}

// TestLoopbackTaskManager: every call reaches the TaskManager as an equal
// copy that shares no memory, and so does a registration.
func TestLoopbackTaskManager(t *testing.T) {
	r := testseed.Rand(t, 3)
	for range 50 {
		reg := random[TaskManagerRegistration](r)
		checkCopy(t, "registration", reg, LoopbackRegistration(reg))
		f := &fakeTM{}
		l := NewLoopbackTaskManager(f)
		d := random[Deployment](r)
		l.SubmitTask(d)
		e := random[CancelTask](r).Exec
		l.CancelTask(e)
		tc := random[TriggerCheckpoint](r)
		l.TriggerCheckpoint(tc)
		nc := random[NotifyCheckpoint](r)
		l.NotifyCheckpoint(nc)
		ev := random[OperatorEvent](r)
		l.SendEvent(ev)
		rj := random[ReleaseJob](r)
		l.ReleaseJob(rj)
		reg2 := random[RegisterJob](r)
		l.RegisterJob(reg2)
		hr := random[HeartbeatReply](r)
		l.HeartbeatReply(hr)
		da := random[DeployAttempt](r)
		l.DeployAttempt(da)
		for i, sent := range []any{d, e, tc, nc, ev, rj, reg2, hr, da} {
			checkCopy(t, reflect.TypeOf(sent).Name(), sent, f.got[i])
		}
	}
}

// TestLoopbackJobManager: every call reaches the JobManager as an equal
// copy that shares no memory.
func TestLoopbackJobManager(t *testing.T) {
	r := testseed.Rand(t, 4)
	for range 50 {
		f := &fakeJM{}
		l := NewLoopbackJobManager(f)
		u, a, d, e, s, st := random[TaskStateUpdate](r), random[AcknowledgeCheckpoint](r), random[DeclineCheckpoint](r),
			random[OperatorEvent](r), random[SourceEnded](r), random[TaskStatsReport](r)
		l.UpdateTaskState(u)
		l.AcknowledgeCheckpoint(a)
		l.DeclineCheckpoint(d)
		l.SendEvent(e)
		l.SourceEnded(s)
		l.ReportTaskStats(st)
		hb, dr := random[Heartbeat](r), random[Deregister](r)
		l.Heartbeat(hb)
		l.Deregister(dr)
		for i, sent := range []any{u, a, d, e, s, st, hb, dr} {
			checkCopy(t, reflect.TypeOf(sent).Name(), sent, f.got[i])
		}
	}
}

// BenchmarkLoopback is the loopback's cost per control message: encode,
// decode, and the call of a JobManager that does nothing.
func BenchmarkLoopback(b *testing.B) {
	exec := ExecutionID{Job: "0123456789abcdef0123456789abcdef", Vertex: 3, Subtask: 17, Attempt: 1}
	obj := ObjectHandle{Key: "0123456789abcdef0123456789abcdef/chk-42/op-5f3a/17-keyed", Size: 1 << 20, CRC: 0xdeadbeef}
	ack := AcknowledgeCheckpoint{Exec: exec, ID: 42, Operators: []OperatorSnapshot{{OperatorID: "5f3a9c0e1b2d4f60",
		State: SubtaskState{Subtask: 17, Keyed: []KeyedHandle{{Kind: KindCanonical, KeyGroupStart: 136, KeyGroupEnd: 143, Object: obj}}}}},
		Metrics: CheckpointMetrics{SyncMillis: 1, AsyncMillis: 20, Bytes: 1 << 20, PersistedBytes: 1 << 20, AckMillis: 1733480000000}}
	jm := NewLoopbackJobManager(nopJM{})
	tm := NewLoopbackTaskManager(nopTM{})
	b.Run("TriggerCheckpoint", func(b *testing.B) {
		tc := TriggerCheckpoint{Exec: exec, ID: 42, Timestamp: 1733480000000, Options: CheckpointOptions{Unaligned: true}}
		b.ReportAllocs()
		for b.Loop() {
			tm.TriggerCheckpoint(tc)
		}
	})
	b.Run("TaskStateUpdate", func(b *testing.B) {
		u := TaskStateUpdate{Exec: exec, State: TaskRunning}
		b.ReportAllocs()
		for b.Loop() {
			jm.UpdateTaskState(u)
		}
	})
	b.Run("AcknowledgeCheckpoint", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			jm.AcknowledgeCheckpoint(ack)
		}
	})
}

type nopJM struct{}

func (nopJM) UpdateTaskState(TaskStateUpdate)             {}
func (nopJM) AcknowledgeCheckpoint(AcknowledgeCheckpoint) {}
func (nopJM) DeclineCheckpoint(DeclineCheckpoint)         {}
func (nopJM) SendEvent(OperatorEvent)                     {}
func (nopJM) SourceEnded(SourceEnded)                     {}
func (nopJM) ReportTaskStats(TaskStatsReport)             {}
func (nopJM) Heartbeat(Heartbeat)                         {}
func (nopJM) Deregister(Deregister)                       {}

type nopTM struct{}

func (nopTM) SubmitTask(Deployment)               {}
func (nopTM) CancelTask(ExecutionID)              {}
func (nopTM) TriggerCheckpoint(TriggerCheckpoint) {}
func (nopTM) NotifyCheckpoint(NotifyCheckpoint)   {}
func (nopTM) SendEvent(OperatorEvent)             {}
func (nopTM) ReleaseJob(ReleaseJob)               {}
func (nopTM) DeployAttempt(DeployAttempt)         {}
func (nopTM) RegisterJob(RegisterJob)             {}
func (nopTM) HeartbeatReply(HeartbeatReply)       {}
