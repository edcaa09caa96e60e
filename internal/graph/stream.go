package graph

import "fmt"

// PartitionKind is how records of an edge are spread over the consumer's subtasks.
type PartitionKind uint8

const (
	// Forward sends each record to the consumer subtask with the same index.
	Forward PartitionKind = iota
	// Rebalance sends records round-robin to all consumers.
	Rebalance
	// Rescale sends records round-robin to a local subset of consumers.
	Rescale
	// Broadcast sends every record to every consumer.
	Broadcast
	// Shuffle sends each record to a random consumer.
	Shuffle
	// Hash sends each record to the subtask owning its key's key group.
	Hash
	// Custom lets a user function pick the consumer.
	Custom
)

// String is the ship strategy name Flink shows in plans.
func (k PartitionKind) String() string {
	switch k {
	case Forward:
		return "FORWARD"
	case Rebalance:
		return "REBALANCE"
	case Rescale:
		return "RESCALE"
	case Broadcast:
		return "BROADCAST"
	case Shuffle:
		return "SHUFFLE"
	case Hash:
		return "HASH"
	case Custom:
		return "CUSTOM"
	}
	return fmt.Sprintf("PartitionKind(%d)", uint8(k))
}

// Pattern is which producer subtasks connect to which consumer subtasks.
func (k PartitionKind) Pattern() Pattern {
	if k == Forward || k == Rescale {
		return Pointwise
	}
	return AllToAll
}

// Node is one operator of the StreamGraph.
type Node struct {
	// ID is the node's index in StreamGraph.Nodes: nodes are added in the
	// order the program declares them, so inputs always have smaller IDs.
	ID   int
	Name string
	UID  string
	// Parallelism 0 means the job's default. MaxParallelism 0 means the job's.
	Parallelism, MaxParallelism int
	// ChainingDisabled keeps the node out of any chain; StartNewChain only
	// cuts the chain before it.
	ChainingDisabled, StartNewChain bool
	IsSource, IsSink                bool
	// Inputs in input order; Edge.Input says which logical input each feeds.
	Inputs []Edge
	// TypeName is the Go type of the node's output ("" for sinks).
	TypeName string
	// Factory (an operator.Factory) and OutType (an operator.StreamType) are
	// opaque here; so is Coordinator (an opcoordinator.Factory, for
	// operators with a part on the JobManager, as a source's enumerator).
	Factory, OutType, Coordinator any
	// SideTypes are the node's side outputs (Flink's OutputTag): tag ID ->
	// operator.StreamType. Edges with a Tag read one of them.
	SideTypes map[string]any
	// Validate, if set, checks the operator's configuration at its final
	// parallelism before the job is deployed (a sink's output path, say), so
	// a mistake fails the job before any work.
	Validate func(parallelism int) error
}

// Edge is an input of a node.
type Edge struct {
	From      int // producing node ID
	Input     int // logical input of the consumer (0, or 1 for two-input operators)
	Partition PartitionKind
	// Default marks an edge whose partitioning the user did not choose: it
	// becomes Forward when both sides have the same parallelism and
	// Rebalance otherwise (Flink's rule), decided at compile time.
	Default bool
	// Selector is an operator.SelectorFactory for the partition kinds that
	// need one; opaque here.
	Selector any
	// Tag names the producer's side output this edge reads ("": its main
	// output).
	Tag string
}

// OutputType is the operator.StreamType of the node's output tag ("": main).
func (n *Node) OutputType(tag string) any {
	if tag == "" {
		return n.OutType
	}
	return n.SideTypes[tag]
}

// StreamGraph is every operator a job declared.
type StreamGraph struct {
	JobName            string
	Nodes              []*Node
	DefaultParallelism int
	MaxParallelism     int // 0: derived from the largest parallelism
}

// Add appends a node, assigning its ID.
func (g *StreamGraph) Add(n *Node) *Node {
	n.ID = len(g.Nodes)
	g.Nodes = append(g.Nodes, n)
	return n
}
