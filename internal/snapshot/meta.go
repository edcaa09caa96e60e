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
}

// CodecChangeError is the error for a state whose codec changed between
// the snapshot and the job restoring it. It is permanent (package failure):
// a restart would restore the same snapshot into the same code, so the job
// fails at once instead of restarting into it under its restart strategy.
func CodecChangeError(state, restored, registered string) error {
	return failure.Permanent(fmt.Errorf("state %q was written with codec %q and is declared now with codec %q; "+
		"a state's codec can change only through a declared migration, and Weir has no state migration yet: "+
		"keep the old type (and codec version), or move the data to a state of a new name",
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
