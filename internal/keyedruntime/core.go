package keyedruntime

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"unsafe"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/statebackend/spi"
	"github.com/weirhq/weir/internal/statebackend/typedstore"
	"github.com/weirhq/weir/internal/timers"
	"github.com/weirhq/weir/state"
)

// Core is the keyed half of a keyed operator subtask. It implements the
// timer service users see (Register/Delete event- and processing-time
// timers for the current key).
type Core[K comparable] struct {
	// The pads keep the fields SetKey writes on every record off the cache
	// lines of whatever the allocator puts beside the core: often the core
	// of another subtask, opened right before on the same P, whose writes
	// would then bounce the line between the two tasks' cores (false
	// sharing).
	_        [64]byte
	ctx      *operator.Context
	keyCodec codec.Codec[K]
	hash     func(K) uint32
	kgs      keygroup.Assigner
	st       *operator.KeyedState
	// word: K is a 64-bit integer kind whose codec's encoding is its
	// little-endian memory (codec.MemorySize), so SetKey encodes and
	// hashes it inline instead of through the codec and the hasher.
	word bool
	// sameKey: == on K implies equal encodings (see eqIsIdentity), so
	// SetKey of the current key again (hasKey) has nothing to do.
	sameKey, hasKey bool
	// heap is the backend's store when the backend offers it
	// (spi.DirectStore, checked once in NewCore): SetKey calls it
	// directly instead of through statebackend.Keyed.
	heap    *typedstore.Store
	keyBuf  []byte
	kg      int
	current K
	wm      int64
	// beforeMax is the watermark before the maximum one (see
	// CheckpointWatermark).
	beforeMax int64
	// timerKey is true when the timer service points at the current key.
	timerKey bool
	_        [64]byte
}

// NewCore returns the core of a keyed operator whose task created its keyed
// state (ctx.Keyed()).
func NewCore[K comparable](ctx *operator.Context, keyCodec codec.Codec[K]) (*Core[K], error) {
	st := ctx.Keyed()
	if st == nil {
		return nil, fmt.Errorf("keyed: operator %q has no keyed state (its factory must mark the instance Keyed)", ctx.OperatorName)
	}
	c := &Core[K]{ctx: ctx, keyCodec: keyCodec, hash: Hasher[K](ctx.KeyHash), kgs: keygroup.NewAssigner(ctx.MaxParallelism),
		st: st, wm: math.MinInt64}
	switch reflect.TypeFor[K]().Kind() {
	case reflect.Int64, reflect.Int, reflect.Uint64, reflect.Uint:
		n, mem := codec.MemorySize(keyCodec)
		c.word = mem && n == 8
	}
	if c.word {
		c.keyBuf = make([]byte, 8) // SetKey writes the bytes in place
	}
	c.sameKey = eqIsIdentity(reflect.TypeFor[K]())
	if h, ok := st.Backend.(spi.DirectStore); ok {
		c.heap = h.TypedStore()
	}
	return c, nil
}

// TypedStore is the typed store of the keyed state (the hashmap backend's), or nil with
// another backend.
func (c *Core[K]) TypedStore() *typedstore.Store { return c.heap }

// Store is the keyed state store user functions declare state in.
func (c *Core[K]) Store() state.KeyedStore { return c.st.Backend }

// Current is the current key.
func (c *Core[K]) Current() K { return c.current }

// Word returns the little-endian word of k when k is a 64-bit integer key
// whose encoding is that word (ok false otherwise): what SetKey would hand
// the heap store, without setting anything. WordGroup gives the word's key
// group apart, for a caller that may not need it (typedstore.Table.MemoWord
// does not, typedstore.Table.OwnedWord does).
func (c *Core[K]) Word(k K) (x uint64, ok bool) {
	if !c.word {
		return 0, false
	}
	return *(*uint64)(unsafe.Pointer(&k)), true
}

// WordGroup returns the key group of key word x (see Word).
func (c *Core[K]) WordGroup(x uint64) int { return c.kgs.KeyGroup(keygroup.HashInt64(int64(x))) }

// SetKey makes k the current key of state and timers.
//
// Setting the current key again does nothing: records of one key often
// come in runs (a hot auction, a busy channel), and then the key is not
// encoded and hashed again, and the state tables' cached entry of the
// current key stays valid, so the next access does not search the table.
// Nothing but SetKey changes the backend's or the timer service's current
// key (SetNamespace changes the namespace, which SetKey keeps).
func (c *Core[K]) SetKey(k K) {
	if c.hasKey && c.sameKey && k == c.current {
		return
	}
	c.current, c.hasKey = k, true
	if c.word {
		// The same bytes and hash as the codec and Hasher give.
		x := *(*uint64)(unsafe.Pointer(&k))
		binary.LittleEndian.PutUint64(c.keyBuf, x)
		c.kg = c.kgs.KeyGroup(keygroup.HashInt64(int64(x)))
		if c.heap != nil {
			c.heap.SetCurrentKeyWord(x, c.kg)
		} else {
			c.st.Backend.SetCurrentKey(c.keyBuf, c.kg)
		}
		c.timerKey = false
		return
	}
	c.keyBuf = c.keyCodec.AppendEncode(c.keyBuf[:0], k)
	c.kg = c.kgs.KeyGroup(c.hash(k))
	if c.heap != nil {
		c.heap.SetCurrentKey(c.keyBuf, c.kg)
	} else {
		c.st.Backend.SetCurrentKey(c.keyBuf, c.kg)
	}
	c.timerKey = false
}

// eqIsIdentity reports whether equal values of t (==) always have equal
// encodings in every deterministic codec: booleans, integers and strings,
// and arrays and structs of them. Not floats (-0 == +0, with different
// bits), interfaces (which may hold floats) or pointers (equal pointers
// to a value that changed).
func eqIsIdentity(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	case reflect.Array:
		return eqIsIdentity(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !eqIsIdentity(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

// SetKeyBytes makes the key whose encoding is b current (for timers).
func (c *Core[K]) SetKeyBytes(b []byte) {
	k, _, err := c.keyCodec.Decode(b)
	if err != nil {
		operator.Fail(fmt.Errorf("decoding the key of a timer: %w", err))
	}
	c.SetKey(k)
}

// ForEachKey makes each key that has an entry of the state named name in
// no namespace current in turn (SetKey) and calls fn with it, until fn
// returns an error. fn may read and change the key's state; keys it adds
// may or may not be visited.
func (c *Core[K]) ForEachKey(name string, fn func(K) error) error {
	return c.st.Backend.ForEachKey(name, func(b []byte, _ int) error {
		k, _, err := c.keyCodec.Decode(b)
		if err != nil {
			return fmt.Errorf("decoding a key of state %q: %w", name, err)
		}
		c.SetKey(k)
		return fn(k)
	})
}

// SetNamespace makes ns the namespace of state and timers (windows: the
// window's bytes; nil: none).
func (c *Core[K]) SetNamespace(ns []byte) {
	c.st.Backend.SetCurrentNamespace(ns)
	c.st.Timers.SetCurrentNamespace(ns)
}

// SetStateNamespace makes ns the namespace of state only (timers keep
// theirs): the sliced window operator writes a slice's state on every
// element and needs a timer namespace only when it registers timers.
func (c *Core[K]) SetStateNamespace(ns []byte) { c.st.Backend.SetCurrentNamespace(ns) }

// SetTimerNamespace makes ns the namespace of timers only.
func (c *Core[K]) SetTimerNamespace(ns []byte) { c.st.Timers.SetCurrentNamespace(ns) }

// KeyBytes is the encoding of the current key (valid until the next SetKey).
func (c *Core[K]) KeyBytes() []byte { return c.keyBuf }

func (c *Core[K]) pointTimers() {
	if !c.timerKey {
		c.st.Timers.SetCurrentKey(c.keyBuf, c.kg)
		c.timerKey = true
	}
}

// CurrentProcessingTime is the task's processing time (ms).
func (c *Core[K]) CurrentProcessingTime() int64 { return c.ctx.Clock.NowMillis() }

// CurrentWatermark is the operator's event time (math.MinInt64 at first).
func (c *Core[K]) CurrentWatermark() int64 { return c.wm }

// RegisterEventTimeTimer registers a timer for the current key.
func (c *Core[K]) RegisterEventTimeTimer(ts int64) {
	c.pointTimers()
	c.st.Timers.RegisterEventTime(ts)
}

// DeleteEventTimeTimer deletes a timer of the current key.
func (c *Core[K]) DeleteEventTimeTimer(ts int64) {
	c.pointTimers()
	c.st.Timers.DeleteEventTime(ts)
}

// RegisterProcessingTimeTimer registers a timer for the current key.
func (c *Core[K]) RegisterProcessingTimeTimer(ts int64) {
	c.pointTimers()
	c.st.Timers.RegisterProcessingTime(ts)
	c.ArmProcessingTime()
}

// DeleteProcessingTimeTimer deletes a timer of the current key.
func (c *Core[K]) DeleteProcessingTimeTimer(ts int64) {
	c.pointTimers()
	c.st.Timers.DeleteProcessingTime(ts)
	c.ArmProcessingTime()
}

// ArmProcessingTime asks the task to wake the operator for the earliest
// processing-time timer (also after a restore brought timers back): in the
// millisecond after it (see FireProcessingTime).
func (c *Core[K]) ArmProcessingTime() {
	if t, ok := c.st.Timers.NextProcessingTime(); ok {
		if t < math.MaxInt64 {
			t++
		}
		c.ctx.WakeAt(t)
	} else {
		c.ctx.WakeAt(operator.NoWakeUp)
	}
}

// CheckpointWatermark is the watermark a checkpoint keeps: the current one,
// except after the maximum watermark (end of input, or a stop with
// --drain), which ends event time for this run only: then the one before
// it, so that a run resumed from a drained savepoint goes on from where the
// data was instead of taking every element as late.
func (c *Core[K]) CheckpointWatermark() int64 {
	if c.wm == math.MaxInt64 {
		return c.beforeMax
	}
	return c.wm
}

// RestoreWatermark sets the watermark a restored operator had at its
// checkpoint, without firing timers (those it passed had fired then).
func (c *Core[K]) RestoreWatermark(wm int64) { c.wm = wm }

// AdvanceWatermark fires, in time order, the event-time timers wm passed.
func (c *Core[K]) AdvanceWatermark(wm int64, fire func(timers.Timer)) {
	if wm == math.MaxInt64 && c.wm != math.MaxInt64 {
		c.beforeMax = c.wm
	}
	c.wm = wm
	c.st.Timers.AdvanceWatermark(wm, fire)
}

// FireProcessingTime fires the processing-time timers before now (a timer
// for t fires once processing time is past t, as Flink delays processing
// timers by 1 ms: an element read during millisecond t still belongs to a
// processing-time window ending at t, so that window must not fire during
// t) and arms the next wake-up.
func (c *Core[K]) FireProcessingTime(now int64, fire func(timers.Timer)) {
	if now == math.MinInt64 {
		return
	}
	c.st.Timers.FireProcessingTime(now-1, fire)
	c.ArmProcessingTime()
}
