package query_test

import (
	"slices"
	"testing"
	"time"

	"github.com/weirhq/weir/nexmark/query"
)

// TestQ19Checkpoints: q19 changes its tops in place (an aggregating
// state's accumulator, copied when a snapshot shares it), so checkpoints
// taken while it runs on the heap backend must leave its result as it is
// without them (TestQ19 checks that one against the reference); under
// -race, a snapshot reading a top while it changes is a race.
func TestQ19Checkpoints(t *testing.T) {
	cfg := testConfig(t)
	plain := runQueryWith(t, "q19", query.Options{Config: cfg, Parallelism: 2})
	o := query.Options{Config: cfg, Parallelism: 2, CheckpointInterval: 10 * time.Millisecond, CheckpointDir: t.TempDir()}
	if got := runQueryWith(t, "q19", o); !slices.Equal(got, plain) {
		t.Errorf("q19 with checkpoints: %d rows, without: %d; %s", len(got), len(plain), firstDiff(got, plain))
	}
}
