package memory

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Sample is what the guard reads of the Go runtime.
type Sample struct {
	// LiveHeap is the bytes of heap objects the last collection marked
	// live (/gc/heap/live:bytes).
	LiveHeap int64
	// Stacks is the bytes of goroutine stacks (/memory/classes/heap/stacks:bytes).
	Stacks int64
	// Cycles is the number of completed collections (/gc/cycles/total:gc-cycles).
	Cycles uint64
}

// Used is what the guard compares with its bound.
func (s Sample) Used() int64 { return s.LiveHeap + s.Stacks }

// Watch decides when a live heap above Bound has lasted: it fires when
// every sample from the first one above the bound up to one at least two
// completed collections later was above it. LiveHeap changes only when a
// collection ends, so a spike that one collection finds and the next no
// longer does (a checkpoint's copy, a burst of records) never fires, and a
// heap that stays above the bound fires within two collections of crossing
// it (the soft limit makes those frequent then). Samples with no new
// collection neither fire nor reset.
type Watch struct {
	Bound int64

	over  bool   // the samples since start have all been above Bound
	start uint64 // Cycles of the first of them
}

// Observe takes a sample and reports whether the guard fires.
func (w *Watch) Observe(s Sample) bool {
	if s.Used() <= w.Bound {
		w.over = false
		return false
	}
	if !w.over {
		w.over, w.start = true, s.Cycles
		return false
	}
	return s.Cycles >= w.start+2
}

var names = []string{"/gc/heap/live:bytes", "/memory/classes/heap/stacks:bytes", "/gc/cycles/total:gc-cycles"}

// Reader samples the Go runtime into one metrics.Sample slice, reused by
// every sample (the guard takes one every Interval and after every
// collection). Not for concurrent use: each guard has its own.
type Reader struct{ ms []metrics.Sample }

// NewReader returns a Reader of the metrics Sample holds.
func NewReader() *Reader {
	ms := make([]metrics.Sample, len(names))
	for i, n := range names {
		ms[i].Name = n
	}
	return &Reader{ms: ms}
}

// Read samples the Go runtime.
func (r *Reader) Read() Sample {
	ms := r.ms
	metrics.Read(ms)
	var s Sample
	if ms[0].Value.Kind() == metrics.KindUint64 {
		s.LiveHeap = int64(ms[0].Value.Uint64())
	}
	if ms[1].Value.Kind() == metrics.KindUint64 {
		s.Stacks = int64(ms[1].Value.Uint64())
	}
	if ms[2].Value.Kind() == metrics.KindUint64 {
		s.Cycles = ms[2].Value.Uint64()
	}
	return s
}

// Interval is how often the guard samples besides the end of every
// collection: metrics.Read of three values, without stopping the world.
const Interval = 100 * time.Millisecond

// Run samples read at the end of every garbage collection (a cleanup on an
// unreachable sentinel, re-armed each cycle) and every interval, until stop
// is closed, and, the first time w fires, calls fire with the sample and
// returns. Sampling at each collection's end matters when the heap grows
// fast: with values of 100 KB arriving at hundreds of MB/s, a tick of 100
// ms lets the heap grow past the bound by that much more before the
// samples see it.
func Run(stop <-chan struct{}, interval time.Duration, w *Watch, read func() Sample, fire func(Sample)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	gc := make(chan struct{}, 1)
	done := make(chan struct{})
	defer close(done)
	armGCNotify(&gcNotifier{c: gc, done: done})
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		case <-gc:
		}
		if s := read(); w.Observe(s) {
			fire(s)
			return
		}
	}
}

// gcNotifier signals c (without blocking) at the end of each collection
// until done is closed.
type gcNotifier struct {
	c    chan struct{}
	done chan struct{}
}

type sentinel struct{ _ *int } // holds a pointer: not batched by the tiny allocator

func armGCNotify(n *gcNotifier) {
	runtime.AddCleanup(new(sentinel), func(n *gcNotifier) {
		select {
		case <-n.done:
			return
		default:
		}
		select {
		case n.c <- struct{}{}:
		default:
		}
		armGCNotify(n)
	}, n)
}

// ExceededError is the guard's message for process memory p, set by
// setting (the config field and the flag).
func ExceededError(s Sample, p int64, setting string) error {
	return fmt.Errorf("the live heap stayed above the process memory's share for it over two garbage collections: "+
		"%d bytes (%d MiB) live after collection (state tables, what state values point to such as strings and list elements, "+
		"records in flight, network buffers, goroutine stacks) against a bound of %d bytes, 80%% of the process memory of %d bytes (%d MiB; %s); "+
		"the job was failed before the operating system kills the process: give the process more memory (raise %s, and the container's limit), "+
		"or use the pebble state backend (--state-backend pebble, Config.StateBackend \"pebble\") for state larger than memory",
		s.Used(), s.Used()>>20, GuardBound(p), p, p>>20, setting, setting)
}

// softLimits holds the soft limits of the jobs running in this process:
// the runtime's limit is the smallest of them and of the one found before
// the first, which is restored when the last ends.
var softLimits struct {
	mu     sync.Mutex // guards the fields below
	active map[*int64]struct{}
	before int64
}

// SetSoftLimit lowers the Go runtime's soft memory limit to limit while a
// job runs (never raises it above a limit set before, by GOMEMLIMIT for
// example) and returns the function that ends that: when no job holds a
// limit any more, the limit from before the first is restored.
func SetSoftLimit(limit int64) (restore func()) {
	softLimits.mu.Lock()
	defer softLimits.mu.Unlock()
	if len(softLimits.active) == 0 {
		softLimits.before = debug.SetMemoryLimit(-1)
		softLimits.active = map[*int64]struct{}{}
	}
	h := &limit
	softLimits.active[h] = struct{}{}
	applySoftLimitLocked()
	var once sync.Once
	return func() {
		once.Do(func() {
			softLimits.mu.Lock()
			defer softLimits.mu.Unlock()
			delete(softLimits.active, h)
			applySoftLimitLocked()
		})
	}
}

func applySoftLimitLocked() {
	l := softLimits.before
	for h := range softLimits.active {
		l = min(l, *h)
	}
	debug.SetMemoryLimit(l)
}

// Guard lowers the Go soft limit to process memory p's share and watches
// the live heap against its bound (Watch, Run at Interval), calling fire
// once it stays above. stop ends the watch and restores the soft limit.
// Both the embedded cluster's job and a TaskManager process guard
// themselves with it; they differ in what fire does.
func Guard(p int64, fire func(Sample)) (stop func()) {
	restore := SetSoftLimit(SoftLimit(p))
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		Run(quit, Interval, &Watch{Bound: GuardBound(p)}, NewReader().Read, fire)
	}()
	return func() {
		close(quit)
		<-done
		restore()
	}
}
