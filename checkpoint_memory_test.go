package weir_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
)

// A bound of checkpoint write memory that no write fits in, or a negative
// one, fails the job at its start with an error naming the setting.
func TestCheckpointWriteMemoryTooSmall(t *testing.T) {
	for _, mem := range []int64{1, -5} {
		env := weir.NewEnvironment(weir.Config{Parallelism: 2, Checkpointing: &weir.CheckpointConfig{
			Interval: 10 * time.Millisecond, Dir: fmt.Sprintf("mem://write-memory-%d", -mem), WriteMemory: mem}})
		weir.Collect(weir.FromSlice(env, []int64{1, 2, 3}))
		_, err := env.ExecuteAsync(context.Background(), "write-memory")
		if err == nil || !strings.Contains(err.Error(), "Config.Checkpointing.WriteMemory") {
			t.Fatalf("WriteMemory %d: %v, want an error naming Config.Checkpointing.WriteMemory", mem, err)
		}
	}
}
