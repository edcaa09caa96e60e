package state

// KeyedDescriptor is a keyed state descriptor whose handles have type S:
// ValueDescriptor[V] gives ValueState[V], ListDescriptor[V] ListState[V],
// MapDescriptor[UK, UV] MapState[UK, UV], ReducingDescriptor[V]
// ReducingState[V] and AggregatingDescriptor[IN, ACC, OUT]
// AggregatingState[IN, OUT]. Code that works on a keyed state it does not
// know the kind of (weir.ApplyToKeyedState) takes one.
type KeyedDescriptor[S any] interface {
	// StateName is the descriptor's Name.
	StateName() string
	// State returns the handle of the state in s, as the kind's Get*State
	// function does.
	State(s KeyedStore) S
}

// StateName implements KeyedDescriptor.
func (d ValueDescriptor[V]) StateName() string { return d.Name }

// State implements KeyedDescriptor with GetValueState.
func (d ValueDescriptor[V]) State(s KeyedStore) ValueState[V] { return GetValueState(s, d) }

// StateName implements KeyedDescriptor.
func (d ListDescriptor[V]) StateName() string { return d.Name }

// State implements KeyedDescriptor with GetListState.
func (d ListDescriptor[V]) State(s KeyedStore) ListState[V] { return GetListState(s, d) }

// StateName implements KeyedDescriptor.
func (d MapDescriptor[UK, UV]) StateName() string { return d.Name }

// State implements KeyedDescriptor with GetMapState.
func (d MapDescriptor[UK, UV]) State(s KeyedStore) MapState[UK, UV] { return GetMapState(s, d) }

// StateName implements KeyedDescriptor.
func (d ReducingDescriptor[V]) StateName() string { return d.Name }

// State implements KeyedDescriptor with GetReducingState.
func (d ReducingDescriptor[V]) State(s KeyedStore) ReducingState[V] { return GetReducingState(s, d) }

// StateName implements KeyedDescriptor.
func (d AggregatingDescriptor[IN, ACC, OUT]) StateName() string { return d.Name }

// State implements KeyedDescriptor with GetAggregatingState.
func (d AggregatingDescriptor[IN, ACC, OUT]) State(s KeyedStore) AggregatingState[IN, OUT] {
	return GetAggregatingState(s, d)
}

var (
	_ KeyedDescriptor[ValueState[int]]            = ValueDescriptor[int]{}
	_ KeyedDescriptor[ListState[int]]             = ListDescriptor[int]{}
	_ KeyedDescriptor[MapState[int, int]]         = MapDescriptor[int, int]{}
	_ KeyedDescriptor[ReducingState[int]]         = ReducingDescriptor[int]{}
	_ KeyedDescriptor[AggregatingState[int, int]] = AggregatingDescriptor[int, int, int]{}
)
