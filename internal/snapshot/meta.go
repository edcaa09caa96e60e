package snapshot

import (
	"fmt"

	"github.com/weirhq/weir/failure"
)

// Kind is the kind of a state, recorded in snapshots. The numbers are part of
// the format: never renumber, only add.
type Kind uint8

// State kinds.
const (
	KindValue         Kind = 1
	KindList          Kind = 2
	KindMap           Kind = 3
	KindReducing      Kind = 4
	KindAggregating   Kind = 5
	KindEventTimers   Kind = 6 // timers of the timer service (internal/timers)
	KindProcTimers    Kind = 7
	KindOperatorList  Kind = 8 // operator state, even-split redistribution
	KindOperatorUnion Kind = 9 // operator state, union redistribution
	KindBroadcast     Kind = 10
	maxKind                = KindBroadcast
)

func (k Kind) String() string {
	switch k {
	case KindValue:
		return "value"
	case KindList:
		return "list"
	case KindMap:
		return "map"
	case KindReducing:
		return "reducing"
	case KindAggregating:
		return "aggregating"
	case KindEventTimers:
		return "event-time timers"
	case KindProcTimers:
		return "processing-time timers"
	case KindOperatorList:
		return "operator list"
	case KindOperatorUnion:
		return "operator union list"
	case KindBroadcast:
		return "broadcast"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// IsTimers reports whether the kind holds timers (owned by the timer service,
// not by a state backend).
func (k Kind) IsTimers() bool { return k == KindEventTimers || k == KindProcTimers }

// TTLUpdate says when a state entry's TTL timestamp is refreshed.
type TTLUpdate uint8

// TTL update modes; the numbers are part of the format.
const (
	TTLOnCreateAndWrite TTLUpdate = 0
	TTLOnReadAndWrite   TTLUpdate = 1
)

// StateMeta describes one state in a snapshot and in a backend's registry.
type StateMeta struct {
	Name      string
	Kind      Kind
	TTLMillis int64 // 0: no TTL
	TTLUpdate TTLUpdate
	// Codec identifies how the state's values (and map user keys) are
	// encoded: the Go types and, for codecs that declare one, their codec
	// version (see state.CodecVersioned). Restore refuses a snapshot whose
	// codec differs from the registered state's, since its bytes would be
	// decoded as another type. "" means unknown (snapshots of format
	// version 1, timers): not checked.
	Codec string
	// Schema and KeySchema are the persisted codec.Schema (AppendBinary)
	// of the values and of the map (or broadcast) user keys, for codecs
	// that have one (codec.SchemaOf); "" means none recorded (format
	// version 2 and before, timers, codecs without a schema). A restore
	// whose recorded schema differs from the registered state's migrates
	// the state's bytes (Migration) or fails naming the field.
	Schema    string
	KeySchema string
}

// Migration rewrites the stored bytes of a restored state into the bytes
// of the state as registered now: one value (a list element, a map value)
// or one map user key at a time, appending to dst. A nil func keeps those
// bytes as they are.
type Migration struct {
	Value   func(dst, old []byte) ([]byte, error)
	UserKey func(dst, old []byte) ([]byte, error)
}

// None reports whether m keeps every byte as it is.
func (m Migration) None() bool { return m.Value == nil && m.UserKey == nil }

// Evolve decides, once per state at restore, how bytes written under the
// restored state's metadata become bytes of the registered state: package
// state builds it from the registered codecs. Its errors are permanent.
type Evolve func(restored StateMeta) (Migration, error)

// Resolve is the decision of a backend attaching restored state to a
// registered one: no migration when codec and schemas are equal (the
// common case, decided without calling evolve); evolve's decision when
// they differ; without evolve, the codec identity check of format 2.
func Resolve(restored, registered StateMeta, evolve Evolve) (Migration, error) {
	if restored.Schema == registered.Schema && restored.KeySchema == registered.KeySchema &&
		!CodecMismatch(restored.Codec, registered.Codec) {
		return Migration{}, nil
	}
	if evolve == nil {
		if CodecMismatch(restored.Codec, registered.Codec) || schemaMismatch(restored, registered) {
			return Migration{}, CodecChangeError(restored.Name, restored.Codec, registered.Codec)
		}
		return Migration{}, nil
	}
	return evolve(restored)
}

func schemaMismatch(a, b StateMeta) bool {
	differ := func(x, y string) bool { return x != "" && y != "" && x != y }
	return differ(a.Schema, b.Schema) || differ(a.KeySchema, b.KeySchema)
}

// CodecChangeError is the error for a state whose codec changed between
// the snapshot and the job restoring it. It is permanent (package failure):
// a restart would restore the same snapshot into the same code, so the job
// fails at once instead of restarting into it under its restart strategy.
func CodecChangeError(state, restored, registered string) error {
	return failure.Permanent(fmt.Errorf("state %q was written with codec %q and is declared now with codec %q; "+
		"Weir migrates the state of codecs with a schema (codec.For and the basic codecs: fields added, removed or moved) "+
		"and of codecs that implement codec.Migrator; keep the old type (and codec version), or move the data to a state of a new name",
		state, restored, registered))
}

// CodecMismatch says whether a restored state's codec differs from the
// registered one's; unknown ("") on either side matches.
func CodecMismatch(restored, registered string) bool {
	return restored != "" && registered != "" && restored != registered
}

// HasTTL reports whether entries of the state carry a TTL timestamp.
func (m StateMeta) HasTTL() bool { return m.TTLMillis > 0 }

// Entry is one logical state entry. Slices are only valid during the callback
// that receives the entry.
type Entry struct {
	State      int // index into the snapshot's states
	Key        []byte
	Namespace  []byte
	HasUserKey bool // map entries
	UserKey    []byte
	Value      []byte
	HasTS      bool // the state has TTL: TS is the last write (or access) time in ms
	TS         int64
}

// Source is one state of a backend (or of the timer service) as seen by the
// snapshot writer: a frozen view that may be read from another goroutine.
type Source interface {
	Meta() StateMeta
	// KeyGroup calls add for every live entry of key group kg (entry.State is
	// set by the writer).
	KeyGroup(kg int, add func(Entry) error) error
}
