package graph

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/weirhq/weir/internal/keygroup"
)

// JobGraph is what the JobManager schedules: vertices of chained operators
// and the network edges between them.
type JobGraph struct {
	Name           string
	MaxParallelism int
	// Vertices in topological order (by head node ID).
	Vertices []*Vertex
	Edges    []*JobEdge
	// OperatorIDs maps node ID to its stable operator ID.
	OperatorIDs []string
	// Fingerprint identifies the graph's structure; every process of a job
	// must compute the same one.
	Fingerprint string
}

// Vertex is one chain of operators; it runs as Parallelism subtasks.
type Vertex struct {
	ID             string // the head operator's ID
	Index          int    // position in JobGraph.Vertices
	Name           string
	Parallelism    int
	MaxParallelism int
	// Nodes of the chain in node-ID order; Nodes[0] is the head.
	Nodes []*Node
	// Inputs are the edges into the head, Outputs the edges leaving any node.
	Inputs, Outputs []*JobEdge
	// NumInputs is the number of logical inputs of the head operator.
	NumInputs int
}

// JobEdge is a network edge between two vertices.
type JobEdge struct {
	Index          int // position in JobGraph.Edges
	Source, Target *Vertex
	FromNode       *Node // producing node (inside Source)
	ToNode         *Node // consuming node (Target's head)
	Input          int   // logical input of ToNode
	Partition      PartitionKind
	Pattern        Pattern
	Selector       any
	Tag            string // the producer's side output ("": main output)
}

// Compile chains the stream graph into a job graph.
func Compile(sg *StreamGraph) (*JobGraph, error) {
	if len(sg.Nodes) == 0 {
		return nil, fmt.Errorf("graph: the job %q declares no operators", sg.JobName)
	}
	def := sg.DefaultParallelism
	if def < 1 {
		def = 1
	}
	par := make([]int, len(sg.Nodes))
	maxP := sg.MaxParallelism
	for i, n := range sg.Nodes {
		par[i] = n.Parallelism
		if par[i] == 0 {
			par[i] = def
		}
		if par[i] < 1 {
			return nil, fmt.Errorf("graph: operator %q has parallelism %d", n.Name, par[i])
		}
		for _, e := range n.Inputs {
			if e.From >= n.ID {
				return nil, fmt.Errorf("graph: operator %q reads from a later operator", n.Name)
			}
		}
	}
	if maxP == 0 {
		top := 1
		for _, p := range par {
			top = max(top, p)
		}
		maxP = keygroup.DefaultMaxParallelismFor(top)
	}
	for _, n := range sg.Nodes {
		for k := range n.Inputs {
			if e := &n.Inputs[k]; e.Default {
				e.Partition = Forward
				if par[e.From] != par[n.ID] {
					e.Partition = Rebalance
				}
			}
		}
	}
	for i, n := range sg.Nodes {
		mp := n.MaxParallelism
		if mp == 0 {
			mp = maxP
		}
		if err := keygroup.Validate(par[i], mp); err != nil {
			return nil, fmt.Errorf("graph: operator %q: %w", n.Name, err)
		}
		for _, e := range n.Inputs {
			if e.Partition == Forward && par[e.From] != par[i] {
				return nil, fmt.Errorf("graph: forward partitioning does not allow a change of parallelism: %q (%d) -> %q (%d); use rebalance or rescale",
					sg.Nodes[e.From].Name, par[e.From], n.Name, par[i])
			}
		}
	}
	ids, err := operatorIDs(sg)
	if err != nil {
		return nil, err
	}

	jg := &JobGraph{Name: sg.JobName, MaxParallelism: maxP, OperatorIDs: ids}
	vertexOf := make([]*Vertex, len(sg.Nodes))
	outDegree := make([]int, len(sg.Nodes))
	for _, n := range sg.Nodes {
		for _, e := range n.Inputs {
			outDegree[e.From]++
		}
	}
	maxPar := make([]int, len(sg.Nodes))
	for i, n := range sg.Nodes {
		maxPar[i] = n.MaxParallelism
		if maxPar[i] == 0 {
			maxPar[i] = maxP
		}
	}
	for i, n := range sg.Nodes {
		if chainable(sg, n, par, maxPar) {
			v := vertexOf[n.Inputs[0].From]
			v.Nodes = append(v.Nodes, n)
			vertexOf[i] = v
			continue
		}
		mp := n.MaxParallelism
		if mp == 0 {
			mp = maxP
		}
		v := &Vertex{ID: ids[i], Index: len(jg.Vertices), Parallelism: par[i], MaxParallelism: mp, Nodes: []*Node{n}}
		for _, e := range n.Inputs {
			v.NumInputs = max(v.NumInputs, e.Input+1)
		}
		vertexOf[i] = v
		jg.Vertices = append(jg.Vertices, v)
	}
	for _, v := range jg.Vertices {
		names := make([]string, len(v.Nodes))
		for i, n := range v.Nodes {
			names[i] = n.Name
		}
		v.Name = strings.Join(names, " -> ")
	}
	for i, n := range sg.Nodes {
		if vertexOf[i].Nodes[0] != n {
			continue // chained: its input is inside the vertex
		}
		for _, e := range n.Inputs {
			je := &JobEdge{
				Index: len(jg.Edges), Source: vertexOf[e.From], Target: vertexOf[i],
				FromNode: sg.Nodes[e.From], ToNode: n, Input: e.Input,
				Partition: e.Partition, Pattern: e.Partition.Pattern(), Selector: e.Selector, Tag: e.Tag,
			}
			jg.Edges = append(jg.Edges, je)
			je.Source.Outputs = append(je.Source.Outputs, je)
			je.Target.Inputs = append(je.Target.Inputs, je)
		}
	}
	jg.Fingerprint = fingerprint(jg)
	return jg, nil
}

// chainable reports whether n joins its single input's chain (Flink's rules,
// plus equal max parallelism: a vertex has one number of key groups).
func chainable(sg *StreamGraph, n *Node, par, maxPar []int) bool {
	if len(n.Inputs) != 1 || n.IsSource || n.ChainingDisabled || n.StartNewChain {
		return false
	}
	e := n.Inputs[0]
	up := sg.Nodes[e.From]
	return e.Partition == Forward && !up.ChainingDisabled && !up.IsSink && par[e.From] == par[n.ID] &&
		maxPar[e.From] == maxPar[n.ID]
}

// operatorIDs gives every node a stable 32-hex-digit ID: from its UID when it
// has one, otherwise from its name, its inputs' IDs and partitioning, and how
// many earlier nodes had the same, so it survives changes of parallelism.
func operatorIDs(sg *StreamGraph) ([]string, error) {
	ids := make([]string, len(sg.Nodes))
	seenUID := map[string]string{}
	seenShape := map[string]int{}
	for i, n := range sg.Nodes {
		h := sha256.New()
		if n.UID != "" {
			if prev, ok := seenUID[n.UID]; ok {
				return nil, fmt.Errorf("graph: operators %q and %q have the same UID %q", prev, n.Name, n.UID)
			}
			seenUID[n.UID] = n.Name
			fmt.Fprintf(h, "uid\x00%s", n.UID)
		} else {
			var shape strings.Builder
			fmt.Fprintf(&shape, "name\x00%s", n.Name)
			for _, e := range n.Inputs {
				// A default edge's kind depends on parallelism; hash what
				// the user declared so that rescaling keeps the ID.
				kind := e.Partition.String()
				if e.Default {
					kind = "DEFAULT"
				}
				fmt.Fprintf(&shape, "\x00in\x00%s\x00%d\x00%s", ids[e.From], e.Input, kind)
			}
			s := shape.String()
			fmt.Fprintf(h, "%s\x00#%d", s, seenShape[s])
			seenShape[s]++
		}
		ids[i] = hex.EncodeToString(h.Sum(nil)[:16])
	}
	return ids, nil
}

func fingerprint(jg *JobGraph) string {
	h := sha256.New()
	fmt.Fprintf(h, "weir-jobgraph-v1\x00%d\n", jg.MaxParallelism)
	for _, v := range jg.Vertices {
		fmt.Fprintf(h, "vertex %s %d %d\n", v.ID, v.Parallelism, v.MaxParallelism)
		for _, n := range v.Nodes {
			fmt.Fprintf(h, "  op %s %q %q src=%t sink=%t\n", jg.OperatorIDs[n.ID], n.Name, n.TypeName, n.IsSource, n.IsSink)
		}
	}
	for _, e := range jg.Edges {
		fmt.Fprintf(h, "edge %s -> %s input %d %s %s\n", jg.OperatorIDs[e.FromNode.ID], e.Target.ID, e.Input, e.Partition, e.Pattern)
		if e.Tag != "" {
			fmt.Fprintf(h, "  side output %q\n", e.Tag)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Describe renders the job graph as text, one vertex per line, for golden
// tests and logs.
func (jg *JobGraph) Describe() string {
	var b strings.Builder
	for _, v := range jg.Vertices {
		fmt.Fprintf(&b, "vertex %d %q parallelism=%d\n", v.Index, v.Name, v.Parallelism)
		for _, e := range v.Outputs {
			fmt.Fprintf(&b, "  %q -> vertex %d input %d %s %s\n", e.FromNode.Name, e.Target.Index, e.Input, e.Partition, e.Pattern)
		}
	}
	return b.String()
}
