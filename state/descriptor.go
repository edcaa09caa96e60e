package state

import (
	"fmt"
	"reflect"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/snapshot"
)

// TTLUpdate says which accesses refresh an entry's TTL.
type TTLUpdate uint8

const (
	// OnCreateAndWrite refreshes the TTL when the entry is written.
	OnCreateAndWrite TTLUpdate = TTLUpdate(snapshot.TTLOnCreateAndWrite)
	// OnReadAndWrite also refreshes it when the entry is read.
	OnReadAndWrite TTLUpdate = TTLUpdate(snapshot.TTLOnReadAndWrite)
)

// TTLConfig makes state entries expire TTL after their last update.
// Expired entries are never returned.
type TTLConfig struct {
	TTL    time.Duration // at least one millisecond
	Update TTLUpdate
}

// ValueDescriptor declares a ValueState.
type ValueDescriptor[V any] struct {
	Name  string
	Codec codec.Codec[V]
	TTL   *TTLConfig
}

// ListDescriptor declares a ListState.
type ListDescriptor[V any] struct {
	Name  string
	Codec codec.Codec[V]
	TTL   *TTLConfig
}

// MapDescriptor declares a MapState.
type MapDescriptor[UK comparable, UV any] struct {
	Name         string
	UserKeyCodec codec.Codec[UK]
	ValueCodec   codec.Codec[UV]
	TTL          *TTLConfig
}

// ReducingDescriptor declares a ReducingState.
type ReducingDescriptor[V any] struct {
	Name   string
	Codec  codec.Codec[V]
	Reduce func(a, b V) V
	TTL    *TTLConfig
}

// AggregatingDescriptor declares an AggregatingState.
type AggregatingDescriptor[IN, ACC, OUT any] struct {
	Name     string
	AccCodec codec.Codec[ACC]
	Create   func() ACC
	// Add folds in into acc: value first, accumulator second, as the
	// window AggregateFunction's Add and Flink's AggregateFunction.add.
	Add    func(in IN, acc ACC) ACC
	Result func(acc ACC) OUT
	TTL    *TTLConfig
}

func stateMeta(name string, kind snapshot.Kind, ttl *TTLConfig, codecID string) snapshot.StateMeta {
	if name == "" {
		panic(fmt.Sprintf("state: %s state descriptor without a name", kind))
	}
	m := snapshot.StateMeta{Name: name, Kind: kind, Codec: codecID}
	if ttl != nil {
		if ttl.TTL < time.Millisecond {
			panic(fmt.Sprintf("state %q: TTL %v is below one millisecond", name, ttl.TTL))
		}
		if ttl.Update != OnCreateAndWrite && ttl.Update != OnReadAndWrite {
			panic(fmt.Sprintf("state %q: unknown TTL update mode %d", name, ttl.Update))
		}
		m.TTLMillis = ttl.TTL.Milliseconds()
		m.TTLUpdate = snapshot.TTLUpdate(ttl.Update)
	}
	return m
}

func need(ok bool, name, what string) {
	if !ok {
		panic(fmt.Sprintf("state %q: descriptor has no %s", name, what))
	}
}

// CodecVersioned is implemented by codecs whose encoding can change for the
// same Go type (a hand-written codec's second layout, say): the version is
// part of the state's codec identity recorded in snapshots, so restoring
// bytes written by another version fails instead of decoding garbage.
// Derived codecs (codec.For) need not implement it: their encoding follows
// the type, whose name is recorded.
type CodecVersioned interface {
	CodecVersion() int
}

// codecID is the identity of a codec of T recorded with a state in
// snapshots: the Go type's name, plus the codec's declared version. It
// deliberately does not name the codec's implementation type, so that an
// internal change of how codecs are built does not invalidate savepoints.
func codecID[T any](c any) string {
	id := reflect.TypeFor[T]().String()
	if v, ok := c.(CodecVersioned); ok {
		id += fmt.Sprintf("@v%d", v.CodecVersion())
	}
	return id
}
