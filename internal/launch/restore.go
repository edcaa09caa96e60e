package launch

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/graph"
)

// warnMissingUIDs logs one warning listing the operators that may hold state
// (sources, keyed operators) and have no UID. Their state is matched on
// restore by a stable ID derived from their name and inputs, so a change of
// the graph upstream of them (or of their name) orphans it; Flink gives the
// same advice (set uid on every stateful operator). Other operators can
// hold state too (a sink's pending commits, broadcast state), but the graph
// cannot tell, so they are not listed.
func warnMissingUIDs(logger *slog.Logger, job string, nodes []*graph.Node) {
	var missing []string
	for _, n := range nodes {
		if n.UID != "" {
			continue
		}
		switch {
		case n.IsSource || n.Coordinator != nil:
			missing = append(missing, fmt.Sprintf("%q (source)", n.Name))
		case slices.ContainsFunc(n.Inputs, func(e graph.Edge) bool { return e.Partition == graph.Hash }):
			missing = append(missing, fmt.Sprintf("%q (keyed)", n.Name))
		}
	}
	if len(missing) == 0 {
		return
	}
	logger.Warn("stateful operators without a UID: their checkpoints and savepoints will not restore after a change of the job graph "+
		"that changes their names or inputs; set a UID on the stream each returns, sources too (DataStream.UID: weir.Generate(...).UID(\"payments\"))",
		"job", job, "operators", strings.Join(missing, ", "))
}

// adoptedMaxParallelism returns the max parallelism to adopt from the
// restored checkpoint m when the job did not set one: the one its keyed
// operators had, when they agree, it differs from jg's derived default and
// every default-max-parallelism vertex's parallelism fits under it; else 0.
// Operators that set their own max parallelism keep it (and are checked
// against the checkpoint when the restore is planned).
func adoptedMaxParallelism(m *storage.Metadata, jg *graph.JobGraph) int {
	mp := restoredMaxParallelism(m)
	if mp == 0 || mp == jg.MaxParallelism || aboveMaxParallelism(jg, mp) != nil {
		return 0
	}
	return mp
}

// restoredMaxParallelism is the max parallelism of m's keyed operators
// when they agree; else 0.
func restoredMaxParallelism(m *storage.Metadata) int {
	mp := 0
	for _, os := range m.Operators {
		if !os.HasKeyed() {
			continue
		}
		if mp != 0 && os.MaxParallelism != mp {
			return 0
		}
		mp = os.MaxParallelism
	}
	return mp
}

// aboveMaxParallelism returns a vertex of jg that takes the job's max
// parallelism (none of its operators sets its own) and runs at a
// parallelism above mp; nil if none does.
func aboveMaxParallelism(jg *graph.JobGraph, mp int) *graph.Vertex {
	for _, v := range jg.Vertices {
		defaulted := true
		for _, n := range v.Nodes {
			defaulted = defaulted && n.MaxParallelism == 0
		}
		if defaulted && v.Parallelism > mp {
			return v
		}
	}
	return nil
}

// checkRestoredMaxParallelism fails a resume whose parallelism is above the
// max parallelism that the restored keyed state was cut into: key groups
// cannot be split, so no subtask beyond the max parallelism could get any.
func checkRestoredMaxParallelism(m *storage.Metadata, jg *graph.JobGraph) error {
	mp := restoredMaxParallelism(m)
	if mp == 0 {
		return nil
	}
	v := aboveMaxParallelism(jg, mp)
	if v == nil {
		return nil
	}
	return fmt.Errorf("%q runs at parallelism %d, above the max parallelism %d of checkpoint %d "+
		"(its keyed state is cut into %d key groups, fixed when the job first ran): resume at a parallelism of at most %d; "+
		"a job meant to scale further must first run with a larger max parallelism "+
		"(--max-parallelism of weir run, Flink's pipeline.max-parallelism, Config.MaxParallelism)",
		v.Nodes[0].Name, v.Parallelism, mp, m.CheckpointID, mp, mp)
}
