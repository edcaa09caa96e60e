package statebackend

import (
	"fmt"

	"github.com/weirhq/weir/internal/snapshot"
)

// checkMaxParallelism rejects snapshots cut into a different number of key
// groups: their key groups mean different keys.
func checkMaxParallelism(r *snapshot.Reader, maxPar int) error {
	if got := r.Header().MaxParallelism; got != maxPar {
		return fmt.Errorf("statebackend: snapshot %d has max parallelism %d, the job %d; max parallelism cannot change",
			r.Header().CheckpointID, got, maxPar)
	}
	return nil
}
