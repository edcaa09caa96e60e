package weir

import (
	"fmt"
	"testing"

	"github.com/weirhq/weir/internal/keyedruntime"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/testseed"
)

type selPair struct{ A, B int64 }

type selNamed struct {
	S string
	N int64
}

// checkKeySelector checks that keySelector, one record and a batch at a
// time, sends every key to the subtask that owns the key group the keyed
// operator's Hasher gives it under the same key hash version.
func checkKeySelector[K comparable](t *testing.T, keys []K) {
	for _, v := range []keygroup.HashVersion{keygroup.HashFNV, keygroup.HashWords} {
		for _, r := range []operator.Route{{Channels: 3, MaxParallelism: 128}, {Channels: 7, MaxParallelism: 1000}} {
			r.KeyHash = v
			t.Run(fmt.Sprintf("v%d/%d-of-%d", v, r.Channels, r.MaxParallelism), func(t *testing.T) {
				hash := keyedruntime.Hasher[K](v)
				var one func(K) int
				var batch func([]K, []int32)
				switch s := keySelector(func(k K) K { return k })(r).(type) {
				case operator.Selector[K]:
					one, batch = s.One, s.Batch
				case func(K) int:
					one = s
				}
				chs := make([]int32, len(keys))
				if batch != nil {
					batch(keys, chs)
				}
				for i, k := range keys {
					want := keygroup.OperatorIndex(keygroup.ForHash(hash(k), r.MaxParallelism), r.Channels, r.MaxParallelism)
					if got := one(k); got != want {
						t.Fatalf("key %v: channel %d, its key group's owner is %d", k, got, want)
					}
					if batch != nil && int(chs[i]) != want {
						t.Fatalf("key %v: channel %d in a batch, its key group's owner is %d", k, chs[i], want)
					}
				}
			})
		}
	}
}

func TestKeySelectorFollowsKeyHashVersion(t *testing.T) {
	r := testseed.Rand(t, 0)
	var ints []int64
	var strs []string
	var pairs []selPair
	var named []selNamed
	for range 500 {
		a, b := r.Int64N(1_000_000), r.Int64N(50_000)
		ints, pairs = append(ints, a), append(pairs, selPair{a, b})
		strs, named = append(strs, fmt.Sprint(a)), append(named, selNamed{fmt.Sprint(b), a})
	}
	t.Run("int64", func(t *testing.T) { checkKeySelector(t, ints) })
	t.Run("string", func(t *testing.T) { checkKeySelector(t, strs) })
	t.Run("raw-struct", func(t *testing.T) { checkKeySelector(t, pairs) })
	t.Run("encoded-struct", func(t *testing.T) { checkKeySelector(t, named) })
	// The versions differ for struct keys (else the version would not matter).
	moved := 0
	for _, p := range pairs {
		if keyedruntime.Hasher[selPair](keygroup.HashFNV)(p) != keyedruntime.Hasher[selPair](keygroup.HashWords)(p) {
			moved++
		}
	}
	if moved < len(pairs)*9/10 {
		t.Fatalf("only %d of %d pair keys hash differently under the two versions", moved, len(pairs))
	}
}
