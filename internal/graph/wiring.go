package graph

// Pattern says how the subtasks of a producer and a consumer connect.
type Pattern uint8

const (
	// AllToAll connects every producer subtask to every consumer subtask.
	AllToAll Pattern = iota
	// Pointwise connects each producer to a contiguous local group of
	// consumers (or each consumer to a group of producers).
	Pointwise
)

func (p Pattern) String() string {
	if p == Pointwise {
		return "POINTWISE"
	}
	return "ALL_TO_ALL"
}

// Targets returns the consumer subtasks of producer i of an edge from p
// producer subtasks to q consumer subtasks: the range [lo, hi), in
// subpartition order. Every pattern wires contiguous ranges, so a subtask's
// wiring is computed in constant time at any parallelism.
//
// Pointwise follows Flink: with p >= q consumer j reads producers
// [j*p/q, (j+1)*p/q); with p < q consumer j reads producer j*p/q.
func Targets(pat Pattern, p, q, i int) (lo, hi int) {
	switch {
	case pat == AllToAll:
		return 0, q
	case p >= q:
		// The j with j*p/q <= i < (j+1)*p/q.
		j := ((i+1)*q - 1) / p
		return j, j + 1
	default:
		// Every j with j*p/q == i.
		return (i*q + p - 1) / p, ((i+1)*q + p - 1) / p
	}
}

// Sources returns the producer subtasks of consumer j: the range [lo, hi),
// in channel order.
func Sources(pat Pattern, p, q, j int) (lo, hi int) {
	switch {
	case pat == AllToAll:
		return 0, p
	case p >= q:
		return j * p / q, (j + 1) * p / q
	default:
		return j * p / q, j*p/q + 1
	}
}

// Wiring returns the whole wiring of an edge, for tests and display:
// targets[i] lists the consumers of producer i, sources[j] the producers of
// consumer j. It takes p*q space for all-to-all edges; the runtime uses
// Targets and Sources.
func Wiring(pat Pattern, p, q int) (targets, sources [][]int) {
	targets = make([][]int, p)
	sources = make([][]int, q)
	for i := range p {
		lo, hi := Targets(pat, p, q, i)
		for j := lo; j < hi; j++ {
			targets[i] = append(targets[i], j)
		}
	}
	for j := range q {
		lo, hi := Sources(pat, p, q, j)
		for i := lo; i < hi; i++ {
			sources[j] = append(sources[j], i)
		}
	}
	return targets, sources
}
