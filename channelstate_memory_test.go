package weir_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/connector/datagen"
)

// An unaligned checkpoint whose input channel state passes
// CheckpointConfig.ChannelStateMemory is declined, naming the setting,
// instead of being held in memory; with no failed checkpoint tolerated and
// no restarts the job fails with that message.
func TestChannelStateMemoryBound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env := weir.NewEnvironment(weir.Config{Parallelism: 2,
		Checkpointing: &weir.CheckpointConfig{Interval: 50 * time.Millisecond, Dir: t.TempDir(), Unaligned: true, ChannelStateMemory: 4 << 10},
		Restart:       map[string]string{"restart-strategy.type": "none"}})
	src := weir.FromSource[int64, datagen.Split](env, datagen.Generator[int64]{Count: -1, Fn: func(i int64) int64 { return i }}, "gen").UID("gen")
	slow := weir.Map(src.Rebalance(), func(i int64) int64 {
		time.Sleep(20 * time.Microsecond) // a backpressured consumer: its input queues stay full
		return i
	})
	weir.Discard(slow)
	_, err := env.Execute(ctx, "channel-state-bound")
	if err == nil || !strings.Contains(err.Error(), "ChannelStateMemory") {
		t.Fatalf("the job ended with %v, want a declined checkpoint naming ChannelStateMemory", err)
	}
}
