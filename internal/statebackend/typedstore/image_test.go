package typedstore

import (
	"testing"

	"github.com/weirhq/weir/internal/testseed"
)

// Runs of integer keys (ids, i mod N: what most keyed jobs have) must
// spread over home groups as random keys do, whatever the process's
// seeds. 896 sequential 8-byte keys in 128 groups of 8 slots (a table at
// its fullest, 7/8): keys beyond 8 in their home group must probe further.
// Random keys overflow by ~80 (at most ~110 in 300 seed sets); a single
// multiply-fold overflowed by more than 200 for about 1 seed set in 25
// (up to 848), which is what made Probe miss most keys in TestProbeFull.
func TestShortImageSpreadsRuns(t *testing.T) {
	r := testseed.Rand(t, 7)
	saved := [5]uint64{seed0, seed1, seed2, seed3, seed4}
	defer func() { seed0, seed1, seed2, seed3, seed4 = saved[0], saved[1], saved[2], saved[3], saved[4] }()
	for _, stride := range []uint64{1, 128} {
		worst := 0
		for range 200 {
			seed0, seed1, seed2, seed3, seed4 = r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()|1
			var count [128]int
			for i := range uint64(896) {
				count[homeGroup(wordImage(i*stride).hn, 127)]++
			}
			over := 0
			for _, c := range count {
				over += max(c-8, 0)
			}
			worst = max(worst, over)
		}
		t.Logf("stride %d: at most %d of 896 keys past a full home group", stride, worst)
		if worst > 200 {
			t.Fatalf("stride %d: %d of 896 sequential keys past a full home group for some seeds (random keys: ~80)", stride, worst)
		}
	}
}
