package weir

import (
	"math/rand/v2"
	"reflect"
	"unsafe"

	"github.com/weirhq/weir/internal/keyedruntime"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/operator"
)

// roundRobin starts each producer subtask at a different channel so that
// small streams do not all land on channel 0.
func roundRobin[T any](r operator.Route) any {
	next := r.Subtask % r.Channels
	return func(T) int {
		c := next
		next++
		if next == r.Channels {
			next = 0
		}
		return c
	}
}

func shuffleSelector[T any](r operator.Route) any {
	rng := rand.New(rand.NewPCG(uint64(r.Subtask)+1, 0x5eed))
	return func(T) int { return rng.IntN(r.Channels) }
}

// keySelector sends each record to the subtask that owns its key's key group
// (under the job's key hash version), through a table from key group to
// channel (no division per record).
func keySelector[T any, K comparable](key func(T) K) operator.SelectorFactory {
	return func(r operator.Route) any {
		maxP := r.MaxParallelism
		hash := keyedruntime.Hasher[K](r.KeyHash)
		kgs := keygroup.NewAssigner(maxP)
		owner := make([]int32, maxP)
		for kg := range owner {
			owner[kg] = int32(keygroup.OperatorIndex(kg, r.Channels, maxP))
		}
		// The common key kinds hash inline: one indirect call (the user's key
		// function) per record instead of two. A batch is routed in one loop
		// (operator.Selector), so the writer makes no call per record for it.
		switch reflect.TypeFor[K]().Kind() {
		case reflect.Int64, reflect.Int, reflect.Uint64, reflect.Uint:
			return operator.Selector[T]{
				One: func(v T) int {
					k := key(v)
					return int(owner[kgs.KeyGroup(keygroup.HashInt64(*(*int64)(unsafe.Pointer(&k))))])
				},
				Batch: func(vs []T, chs []int32) { routeInt64Keys(vs, chs, key, owner, kgs) },
			}
		case reflect.String:
			return operator.Selector[T]{
				One: func(v T) int {
					k := key(v)
					return int(owner[kgs.KeyGroup(keygroup.HashString(*(*string)(unsafe.Pointer(&k))))])
				},
				Batch: func(vs []T, chs []int32) {
					chs = chs[:len(vs)]
					for i := range vs {
						k := key(vs[i])
						chs[i] = owner[kgs.KeyGroup(keygroup.HashString(*(*string)(unsafe.Pointer(&k))))]
					}
				},
			}
		}
		if keyedruntime.RawKey[K]() {
			// A key whose memory is its encoding (a struct of integers):
			// its bytes are hashed where they are, with no call to the
			// codec, and a batch is routed in one loop. (The version is
			// one predictable branch per key, inlined.)
			v := r.KeyHash
			return operator.Selector[T]{
				One: func(x T) int {
					k := key(x)
					return int(owner[kgs.KeyGroup(keyedruntime.HashRaw(&k, v))])
				},
				Batch: func(vs []T, chs []int32) {
					chs = chs[:len(vs)]
					for i := range vs {
						k := key(vs[i])
						chs[i] = owner[kgs.KeyGroup(keyedruntime.HashRaw(&k, v))]
					}
				},
			}
		}
		return func(v T) int { return int(owner[kgs.KeyGroup(hash(key(v)))]) }
	}
}

// routeInt64Keys is keySelector's batch loop for 64-bit integer keys. It is
// a function of its own, not a closure: the compiler inlined nothing into
// the closure (the key hash and the key group were two calls per record
// there), and with a power-of-two max parallelism Murmur is inlined here.
func routeInt64Keys[T any, K comparable](vs []T, chs []int32, key func(T) K, owner []int32, kgs keygroup.Assigner) {
	chs = chs[:len(vs)]
	if mask, ok := kgs.Mask(); ok {
		for i := range vs {
			k := key(vs[i])
			chs[i] = owner[keygroup.Murmur(keygroup.HashInt64(*(*int64)(unsafe.Pointer(&k))))&mask]
		}
		return
	}
	for i := range vs {
		k := key(vs[i])
		chs[i] = owner[kgs.KeyGroup(keygroup.HashInt64(*(*int64)(unsafe.Pointer(&k))))]
	}
}
