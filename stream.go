package weir

import (
	"fmt"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/operator"
)

// DataStream is a stream of elements of type T. It is a value: methods return
// a new DataStream and leave the receiver as it was, except for the operator
// properties (Name, UID, ...), which belong to the operator that produced it.
type DataStream[T any] struct {
	env *Environment
	// ends are the operators whose outputs make up this stream: one, or
	// several after Union.
	ends []end
}

// end is an operator output with the partitioning chosen for its consumer.
type end struct {
	node      *graph.Node
	partition graph.PartitionKind
	explicit  bool // partition chosen by the user (else forward or rebalance)
	selector  operator.SelectorFactory
	tag       string // side output of node ("": its main output)
}

// newStream is the output of node n. Its default partitioning is decided when
// the graph is compiled (forward if the parallelism matches, else rebalance);
// round-robin serves both, since a forward channel set has one channel.
func newStream[T any](env *Environment, n *graph.Node) DataStream[T] {
	return DataStream[T]{env: env, ends: []end{{node: n, selector: roundRobin[T]}}}
}

// addNode declares an operator reading from the given inputs (stream ends per
// logical input) and producing T (sink: no output type).
func addNode[T any](env *Environment, name string, f operator.Factory, sink bool, inputs ...[]end) *graph.Node {
	n := &graph.Node{Name: name, Factory: f, IsSink: sink}
	if !sink {
		n.OutType = operator.NewStreamType[T](nil)
		n.TypeName = n.OutType.(operator.StreamType).TypeName()
	}
	for in, ends := range inputs {
		for _, e := range ends {
			n.Inputs = append(n.Inputs, graph.Edge{From: e.node.ID, Input: in, Partition: e.partition, Default: !e.explicit, Selector: e.selector, Tag: e.tag})
		}
	}
	env.sg.Add(n)
	return n
}

func (s DataStream[T]) last() *graph.Node {
	if len(s.ends) != 1 {
		panic("weir: operator properties cannot be set on the result of Union; set them on its inputs")
	}
	return s.ends[0].node
}

// Name sets the name of the operator that produced the stream.
func (s DataStream[T]) Name(name string) DataStream[T] { s.last().Name = name; return s }

// UID sets the stable ID of the operator that produced the stream, used to
// match its state across versions of the job.
func (s DataStream[T]) UID(uid string) DataStream[T] { s.last().UID = uid; return s }

// SetParallelism sets the parallelism of the operator that produced the stream.
func (s DataStream[T]) SetParallelism(p int) DataStream[T] {
	if p < 1 {
		s.env.fail(fmt.Errorf("weir: operator %q: parallelism %d must be at least 1", s.last().Name, p))
	}
	s.last().Parallelism = p
	return s
}

// SetMaxParallelism sets the number of key groups of the operator.
func (s DataStream[T]) SetMaxParallelism(p int) DataStream[T] { s.last().MaxParallelism = p; return s }

// DisableChaining keeps the operator out of any chain.
func (s DataStream[T]) DisableChaining() DataStream[T] { s.last().ChainingDisabled = true; return s }

// StartNewChain starts a new chain at the operator.
func (s DataStream[T]) StartNewChain() DataStream[T] { s.last().StartNewChain = true; return s }

// WithCodec sets the codec of the stream's elements (default: derived from T).
func (s DataStream[T]) WithCodec(c codec.Codec[T]) DataStream[T] {
	n := s.last()
	n.OutType = operator.NewStreamType(c)
	return s
}

func (s DataStream[T]) repartition(k graph.PartitionKind, sel operator.SelectorFactory) DataStream[T] {
	ends := make([]end, len(s.ends))
	for i, e := range s.ends {
		ends[i] = end{node: e.node, partition: k, explicit: true, selector: sel, tag: e.tag}
	}
	return DataStream[T]{env: s.env, ends: ends}
}

// Forward sends each element to the next operator's subtask of the same index
// (the parallelism must match).
func (s DataStream[T]) Forward() DataStream[T] {
	return s.repartition(graph.Forward, func(operator.Route) any { return func(T) int { return 0 } })
}

// Rebalance spreads elements round-robin over all subtasks of the next operator.
func (s DataStream[T]) Rebalance() DataStream[T] {
	return s.repartition(graph.Rebalance, roundRobin[T])
}

// Rescale spreads elements round-robin over a local group of the next
// operator's subtasks (fewer channels than Rebalance).
func (s DataStream[T]) Rescale() DataStream[T] { return s.repartition(graph.Rescale, roundRobin[T]) }

// Broadcast sends every element to every subtask of the next operator.
func (s DataStream[T]) Broadcast() DataStream[T] {
	return s.repartition(graph.Broadcast, func(operator.Route) any { return nil })
}

// Shuffle sends each element to a random subtask of the next operator.
func (s DataStream[T]) Shuffle() DataStream[T] {
	return s.repartition(graph.Shuffle, shuffleSelector[T])
}

// PartitionCustom sends each element to the subtask part(key(v), n) returns.
func PartitionCustom[T any, K any](s DataStream[T], part func(key K, numPartitions int) int, key func(T) K) DataStream[T] {
	return s.repartition(graph.Custom, func(r operator.Route) any {
		channels := r.Channels
		return func(v T) int {
			p := part(key(v), channels)
			if p < 0 || p >= channels {
				operator.Fail(fmt.Errorf("custom partitioner returned partition %d, not in [0, %d)", p, channels))
			}
			return p
		}
	})
}
