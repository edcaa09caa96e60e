package launch

import (
	"context"
	"strings"
	"testing"

	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/checkpoint/coordinator"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/jobmanager"
)

// TestCheckShareable: a multi-process cluster refuses, for good and naming
// why, a job with a Collect sink (decision 25 of
// docs/distributed-runtime.md); aligned and unaligned checkpoints pass
// (unaligned ones since slice 4, decision 21).
func TestCheckShareable(t *testing.T) {
	store, err := storage.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	aligned := &jobmanager.JobSpec{Checkpoints: &jobmanager.CheckpointSpec{Store: store}}
	unaligned := &jobmanager.JobSpec{Checkpoints: &jobmanager.CheckpointSpec{Store: store, Settings: coordinator.Settings{Unaligned: true}}}
	for _, c := range []struct {
		name     string
		spec     *jobmanager.JobSpec
		collects int
		want     string // "" for no error
	}{
		{"aligned", aligned, 0, ""},
		{"collect", aligned, 1, "Collect hands elements to this process"},
		{"unaligned", unaligned, 0, ""},
		{"unaligned collect", unaligned, 2, "Collect hands elements to this process"},
	} {
		err := checkShareable(c.spec, c.collects)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !failure.IsPermanent(err)):
			t.Errorf("%s: got %v, want a permanent error containing %q", c.name, err, c.want)
		}
	}
}
