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

// Wiring returns, for an edge from p producer subtasks to q consumer subtasks,
// targets[i]: the consumer subtasks of producer i in subpartition order, and
// sources[j]: the producer subtasks of consumer j in channel order.
//
// Pointwise follows Flink: with p >= q consumer j reads producers
// [j*p/q, (j+1)*p/q); with p < q consumer j reads producer j*p/q.
func Wiring(pat Pattern, p, q int) (targets, sources [][]int) {
	targets = make([][]int, p)
	sources = make([][]int, q)
	if pat == AllToAll {
		for i := range p {
			for j := range q {
				targets[i] = append(targets[i], j)
				sources[j] = append(sources[j], i)
			}
		}
		return targets, sources
	}
	for j := range q {
		if p >= q {
			for i := j * p / q; i < (j+1)*p/q; i++ {
				targets[i] = append(targets[i], j)
				sources[j] = append(sources[j], i)
			}
		} else {
			i := j * p / q
			targets[i] = append(targets[i], j)
			sources[j] = append(sources[j], i)
		}
	}
	return targets, sources
}
