package benchjobs

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/weirhq/weir/internal/protocol"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/cpumeter"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/source"
	"github.com/weirhq/weir/state"
)

// The savepoint benchmark (`weir bench savepoint`): a keyed job loads StateBytes of
// ValueState (Keys keys of 8 bytes, each with a value of ValueBytes bytes
// derived from its key), takes a savepoint, is canceled, and is restored
// from the savepoint at each restore parallelism; every restored job reads
// every key back and checks its value before it is canceled.

// SavepointOptions configures Savepoint. Every field bounds a resource.
type SavepointOptions struct {
	// StateBytes is the logical keyed state: keys x (8 + ValueBytes).
	StateBytes int64
	// ValueBytes is the size of each key's value (at least 8).
	ValueBytes int
	// Backend is "hashmap" or "pebble", for the job that takes the
	// savepoint and the restored ones.
	Backend string
	// Native asks for a NATIVE savepoint (otherwise CANONICAL).
	Native bool
	// Parallelism of the job that takes the savepoint; Restore lists the
	// parallelisms it is restored at, in order.
	Parallelism int
	Restore     []int
	// Dir holds the checkpoint storage, the savepoint and Pebble's working
	// directories; the caller removes it.
	Dir string
	// Timeout bounds each phase (load, savepoint, each restore and its
	// verification).
	Timeout time.Duration
	// CPUProfile, if set, receives a CPU profile of the savepoint phase.
	CPUProfile string
	// Progress receives one line per phase (nil: none).
	Progress io.Writer
}

// Phase is the wall and process CPU time of one phase.
type Phase struct{ Wall, CPU time.Duration }

// RestoreResult is one restore from the savepoint.
type RestoreResult struct {
	Parallelism int
	// Running: from just before the job is submitted until every subtask
	// is RUNNING (a task turns RUNNING after it restored its state and
	// opened its operators).
	Running Phase
	// Verify: reading every key back and checking its value.
	Verify Phase
	// Verified keys had the expected value.
	Verified int64
}

// SavepointResult is what Savepoint measured.
type SavepointResult struct {
	Keys       int64
	StateBytes int64 // logical: Keys x (8 + ValueBytes)
	Load       Phase
	// Settle: after the load, until the process used less than settleCPU
	// in a settleWindow (Pebble's compactions after the load), at most
	// settleMax.
	Settle Phase
	// Savepoint: from the trigger request until its status is COMPLETED.
	Savepoint Phase
	// Acked is the part of Savepoint.Wall until the last task acknowledged
	// (the tasks' snapshot and upload into the checkpoint storage); the rest
	// of the savepoint's end-to-end time is the JobManager's copy into the
	// folder.
	Acked, EndToEnd time.Duration
	// Files and Bytes of the savepoint folder; KeyedKinds the kinds of keyed
	// state handles its metadata names (canonical, native).
	Files      int64
	Bytes      int64
	KeyedKinds []string
	Location   string
	Restores   []RestoreResult
}

// spRecord is a key to load (Key >= 0) or to verify (-Key-1).
type spSource struct {
	n       int64
	verify  bool
	start   *atomic.Bool  // the reader emits nothing before it is set
	emitted *atomic.Int64 // records emitted
}

type noSplit struct{}

type noSplitCodec struct{}

func (noSplitCodec) AppendEncode(dst []byte, _ noSplit) []byte { return dst }
func (noSplitCodec) Decode([]byte) (noSplit, int, error)       { return noSplit{}, 0, nil }

func (s spSource) Boundedness() source.Boundedness  { return source.Unbounded }
func (s spSource) SplitCodec() codec.Codec[noSplit] { return noSplitCodec{} }
func (s spSource) CreateEnumerator(source.EnumeratorContext[noSplit], []byte) (source.Enumerator[noSplit], error) {
	return spEnum{}, nil
}
func (s spSource) CreateReader(ctx source.ReaderContext) (source.Reader[int64, noSplit], error) {
	// Subtask i of p emits the keys k with k % p == i, whatever the
	// parallelism the state was saved at.
	return &spReader{s: s, next: int64(ctx.Subtask()), step: int64(ctx.Parallelism())}, nil
}

type spEnum struct{}

func (spEnum) Start() error                   { return nil }
func (spEnum) HandleSplitRequest(int) error   { return nil }
func (spEnum) AddReader(int) error            { return nil }
func (spEnum) Snapshot(int64) ([]byte, error) { return []byte{}, nil }
func (spEnum) Close() error                   { return nil }

type spReader struct {
	s          spSource
	next, step int64
}

func (r *spReader) Start() error                           { return nil }
func (r *spReader) AddSplits([]noSplit)                    {}
func (r *spReader) NoMoreSplits()                          {}
func (r *spReader) SnapshotState(int64) ([]noSplit, error) { return nil, nil }
func (r *spReader) NotifyCheckpointComplete(int64) error   { return nil }
func (r *spReader) Close() error                           { return nil }
func (r *spReader) PollNext(out source.Output[int64]) (source.Status, <-chan struct{}, time.Duration, error) {
	if !r.s.start.Load() || r.next >= r.s.n {
		return source.NothingAvailable, nil, 10 * time.Millisecond, nil
	}
	k := 0
	for ; k < 1024 && r.next < r.s.n; k++ {
		if r.s.verify {
			out.Collect(-r.next - 1)
		} else {
			out.Collect(r.next)
		}
		r.next += r.step
	}
	r.s.emitted.Add(int64(k))
	return source.MoreAvailable, nil, 0, nil
}

// spValue appends the value of key k, size bytes from a splitmix64 stream
// seeded by k (incompressible, so Pebble's compression does not shrink it).
func spValue(dst []byte, k int64, size int) []byte {
	x := uint64(k)*0x9e3779b97f4a7c15 + 1
	var w [8]byte
	for len(dst) < size {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		binary.LittleEndian.PutUint64(w[:], z)
		dst = append(dst, w[:min(8, size-len(dst))]...)
	}
	return dst
}

// spKey is the state key of a record.
func spKey(r int64) int64 {
	if r < 0 {
		return -r - 1
	}
	return r
}

// spState loads (r >= 0) or verifies (r < 0) the value of a key.
type spState struct {
	size                     int
	loaded, verified, failed *atomic.Int64
	v                        state.ValueState[[]byte]
	buf                      []byte
}

func (s *spState) Open(ctx weir.KeyedRuntimeContext) error {
	s.v = state.GetValueState(ctx.State(), state.ValueDescriptor[[]byte]{Name: "blob", Codec: codec.Bytes()})
	return nil
}

func (s *spState) ProcessElement(_ weir.KeyedContext[int64], r int64, _ weir.Collector[int64]) error {
	if r >= 0 {
		s.v.Update(spValue(make([]byte, 0, s.size), r, s.size))
		s.loaded.Add(1)
		return nil
	}
	got, ok := s.v.Value()
	s.buf = spValue(s.buf[:0], -r-1, s.size)
	if ok && string(got) == string(s.buf) {
		s.verified.Add(1)
	} else {
		s.failed.Add(1)
	}
	return nil
}

// spJob is one run of the benchmark's job.
type spJob struct {
	job                      *weir.Job
	start                    atomic.Bool
	emitted                  atomic.Int64
	loaded, verified, failed atomic.Int64
	client                   *rest.Client
}

func (o SavepointOptions) keys() int64 { return o.StateBytes / int64(8+o.ValueBytes) }

func startSPJob(o SavepointOptions, p int, resume string, verify bool, name string) (*spJob, error) {
	j := &spJob{}
	env := weir.NewEnvironment(weir.Config{Parallelism: p, StateBackend: o.Backend, RESTAddr: "127.0.0.1:0",
		StateDir: filepath.Join(o.Dir, "state-"+name), ResumeFrom: resume,
		Checkpointing: &weir.CheckpointConfig{Interval: 0, Timeout: o.Timeout, Dir: filepath.Join(o.Dir, "checkpoints-"+name)}})
	src := weir.FromSource[int64, noSplit](env, spSource{n: o.keys(), verify: verify, start: &j.start, emitted: &j.emitted}, "keys").UID("keys")
	weir.Discard(weir.ProcessKeyed[int64, int64, int64](weir.KeyBy(src, spKey),
		&spState{size: o.ValueBytes, loaded: &j.loaded, verified: &j.verified, failed: &j.failed}).UID("state").Name("state"))
	job, err := env.ExecuteAsync(context.Background(), "bench-savepoint-"+name)
	if err != nil {
		return nil, err
	}
	j.job = job
	j.client = rest.NewClient(job.RESTAddr(), nil)
	return j, nil
}

func (j *spJob) stop() {
	_ = j.job.Cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, _ = j.job.Wait(ctx)
}

// await polls cond every poll until it is true, the job ends or timeout.
func (j *spJob) await(what string, timeout, poll time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-j.job.Done():
			_, err := j.job.Wait(context.Background())
			return fmt.Errorf("the job ended while %s: %v", what, err)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s took longer than the timeout %v", what, timeout)
		}
		time.Sleep(poll)
	}
}

// allRunning reports whether every subtask of the job is RUNNING.
func (j *spJob) allRunning() (bool, error) {
	d, err := j.client.Job(context.Background(), j.job.ID())
	if err != nil {
		return false, err
	}
	for _, v := range d.Vertices {
		if v.Tasks[protocol.TaskRunning] != v.Parallelism {
			return false, nil
		}
	}
	return len(d.Vertices) > 0, nil
}

func measure(start cpumeter.Sample) Phase {
	cpu, wall := cpumeter.Now().Since(start)
	return Phase{Wall: wall, CPU: cpu}
}

// The settle step's bounds.
const (
	settleWindow = time.Second
	settleCPU    = 50 * time.Millisecond
	settleMax    = 3 * time.Minute
)

// settle waits until the process used less than settleCPU of CPU in a
// settleWindow, at most max (then it goes on: a busy process is measured
// as it is).
func settle(ctx context.Context, max time.Duration) error {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		s := cpumeter.Now()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(settleWindow):
		}
		if cpu, _ := cpumeter.Now().Since(s); cpu < settleCPU {
			return nil
		}
	}
	return nil
}

// freeMemory returns a canceled job's heap to the OS, so the next phase's
// CPU time does not include collecting it.
func freeMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// Savepoint runs the savepoint benchmark.
func Savepoint(ctx context.Context, o SavepointOptions) (*SavepointResult, error) {
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", args...)
		}
	}
	res := &SavepointResult{Keys: o.keys(), StateBytes: o.keys() * int64(8+o.ValueBytes)}
	if res.Keys < 1 {
		return nil, fmt.Errorf("benchjobs: %d bytes of state hold no key of %d bytes", o.StateBytes, 8+o.ValueBytes)
	}
	// Load.
	j, err := startSPJob(o, o.Parallelism, "", false, "load")
	if err != nil {
		return nil, err
	}
	defer func() { j.stop() }()
	t0 := cpumeter.Now()
	j.start.Store(true)
	if err := j.await("loading the state", o.Timeout, 50*time.Millisecond, func() (bool, error) {
		return j.loaded.Load() == res.Keys, ctx.Err()
	}); err != nil {
		return nil, err
	}
	res.Load = measure(t0)
	progress("loaded %d keys (%d MB logical) at p=%d on %s in %v wall, %v CPU", res.Keys, res.StateBytes>>20, o.Parallelism, o.Backend,
		res.Load.Wall.Round(time.Millisecond), res.Load.CPU.Round(time.Millisecond))

	// Settle: Pebble compacts in the background for a while after the
	// load; the savepoint is measured once the process is quiet.
	t0 = cpumeter.Now()
	if err := settle(ctx, min(o.Timeout, settleMax)); err != nil {
		return nil, err
	}
	res.Settle = measure(t0)
	progress("settled (process CPU under %v per %v) after %v wall, %v CPU", settleCPU, settleWindow,
		res.Settle.Wall.Round(time.Millisecond), res.Settle.CPU.Round(time.Millisecond))

	// Savepoint.
	format := rest.FormatCanonical
	if o.Native {
		format = rest.FormatNative
	}
	target := filepath.Join(o.Dir, "savepoints")
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
	}
	t0 = cpumeter.Now()
	rid, err := j.client.TriggerSavepoint(ctx, j.job.ID(), rest.SavepointTriggerRequest{TargetDirectory: target, FormatType: format})
	if err != nil {
		pprof.StopCPUProfile()
		return nil, fmt.Errorf("triggering the savepoint: %w", err)
	}
	err = j.await("taking the savepoint", o.Timeout, 10*time.Millisecond, func() (bool, error) {
		st, err := j.client.SavepointStatus(ctx, j.job.ID(), rid)
		if err != nil || st.Status.ID != rest.StatusCompleted || st.Operation == nil {
			return false, err
		}
		if fc := st.Operation.FailureCause; fc != nil {
			return false, fmt.Errorf("the savepoint failed: %s", fc.StackTrace)
		}
		res.Location = st.Operation.Location
		return true, nil
	})
	res.Savepoint = measure(t0)
	if o.CPUProfile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return nil, err
	}
	if err := j.checkpointTimes(res); err != nil {
		return nil, err
	}
	if err := folderStats(ctx, res); err != nil {
		return nil, err
	}
	progress("savepoint %s (%s keyed state): %d files, %d bytes in %v wall, %v CPU; tasks acknowledged after %v of %v end to end",
		res.Location, strings.Join(res.KeyedKinds, "+"), res.Files, res.Bytes, res.Savepoint.Wall.Round(time.Millisecond),
		res.Savepoint.CPU.Round(time.Millisecond), res.Acked, res.EndToEnd)
	j.stop() // the deferred stop of a canceled job does nothing
	freeMemory()

	// Restores.
	for i, p := range o.Restore {
		r, err := restoreOnce(ctx, o, res, p, fmt.Sprintf("restore%d-p%d", i, p))
		if err != nil {
			return nil, err
		}
		res.Restores = append(res.Restores, *r)
		progress("restored at p=%d: all subtasks RUNNING after %v wall, %v CPU; %d keys verified in %v wall, %v CPU",
			p, r.Running.Wall.Round(time.Millisecond), r.Running.CPU.Round(time.Millisecond), r.Verified,
			r.Verify.Wall.Round(time.Millisecond), r.Verify.CPU.Round(time.Millisecond))
		freeMemory()
	}
	return res, nil
}

func restoreOnce(ctx context.Context, o SavepointOptions, res *SavepointResult, p int, name string) (*RestoreResult, error) {
	r := &RestoreResult{Parallelism: p}
	t0 := cpumeter.Now()
	j, err := startSPJob(o, p, res.Location, true, name)
	if err != nil {
		return nil, err
	}
	defer j.stop()
	if j.job.RestoredFrom() == "" {
		return nil, fmt.Errorf("the job at p=%d did not restore from %s", p, res.Location)
	}
	if err := j.await("restoring", o.Timeout, 5*time.Millisecond, j.allRunning); err != nil {
		return nil, err
	}
	r.Running = measure(t0)
	t0 = cpumeter.Now()
	j.start.Store(true)
	if err := j.await("verifying the restored state", o.Timeout, 20*time.Millisecond, func() (bool, error) {
		return j.verified.Load()+j.failed.Load() == res.Keys, ctx.Err()
	}); err != nil {
		return nil, err
	}
	r.Verify = measure(t0)
	r.Verified = j.verified.Load()
	if f := j.failed.Load(); f > 0 || r.Verified != res.Keys {
		return nil, fmt.Errorf("restored at p=%d: %d of %d keys have a wrong or missing value", p, f, res.Keys)
	}
	return r, nil
}

// checkpointTimes reads the savepoint's trigger, last acknowledgement and
// end from the job's checkpoint statistics.
func (j *spJob) checkpointTimes(res *SavepointResult) error {
	resp, err := http.Get("http://" + j.job.RESTAddr() + "/jobs/" + j.job.ID() + "/checkpoints")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var st rest.CheckpointingStatistics
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&st); err != nil {
		return fmt.Errorf("reading the checkpoint statistics: %w", err)
	}
	sp := st.Latest.Savepoint
	if sp == nil {
		return errors.New("the checkpoint statistics name no savepoint")
	}
	res.Acked = time.Duration(sp.LatestAckTimestamp-sp.TriggerTimestamp) * time.Millisecond
	res.EndToEnd = time.Duration(sp.EndToEndDuration) * time.Millisecond
	return nil
}

// folderStats counts the savepoint folder's files and bytes and the kinds
// of keyed state its metadata names.
func folderStats(ctx context.Context, res *SavepointResult) error {
	dir := strings.TrimPrefix(res.Location, "file://")
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		res.Files++
		res.Bytes += info.Size()
		return nil
	})
	if err != nil {
		return err
	}
	st, m, err := storage.Resolve(ctx, res.Location)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, op := range m.Operators {
		for _, s := range op.Subtasks {
			for _, kh := range s.Keyed {
				if k := kh.Kind; !slices.Contains(res.KeyedKinds, k) {
					res.KeyedKinds = append(res.KeyedKinds, k)
				}
			}
		}
	}
	if len(res.KeyedKinds) == 0 {
		return fmt.Errorf("savepoint %s holds no keyed state", res.Location)
	}
	return nil
}
