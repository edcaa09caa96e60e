package state

import (
	"errors"
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
//
// In every descriptor a nil codec is derived from its type (codec.For);
// Get*State panics, naming the state and the field, when the type has none
// (channels, functions, interfaces): set the field to a codec then.
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

// codecFor is c, or when c is nil the codec derived from V's type
// (codec.For). A V without a derived codec panics naming the state and the
// descriptor field to set.
func codecFor[V any](c codec.Codec[V], name, field string) codec.Codec[V] {
	if c != nil {
		return c
	}
	d, err := derivedCodec[V](name, field)
	if err != nil {
		panic(err.Error())
	}
	return d
}

func derivedCodec[V any](name, field string) (codec.Codec[V], error) {
	d, err := codec.For[V]()
	if err != nil {
		return nil, fmt.Errorf("state %q: the descriptor's %s is nil and codec.For cannot derive one for %s (%v); set %s to a codec.Codec[%[3]s]",
			name, field, reflect.TypeFor[V](), err, field)
	}
	return d, nil
}

// checkCodec is derivedCodec's error when c is nil.
func checkCodec[V any](c codec.Codec[V], name, field string) error {
	if c != nil {
		return nil
	}
	_, err := derivedCodec[V](name, field)
	return err
}

func checkName(name string) error {
	if name == "" {
		return errors.New("state descriptor without a name; set Name")
	}
	return nil
}

// Validate reports what Get*State would refuse in d: no name, or a nil
// Codec where none can be derived from V. Weir calls it when the job is
// built for descriptors held in a user function's fields.
func (d ValueDescriptor[V]) Validate() error {
	return errors.Join(checkName(d.Name), checkCodec(d.Codec, d.Name, "Codec"))
}

// Validate is ValueDescriptor.Validate.
func (d ListDescriptor[V]) Validate() error {
	return errors.Join(checkName(d.Name), checkCodec(d.Codec, d.Name, "Codec"))
}

// Validate is ValueDescriptor.Validate, for both codecs.
func (d MapDescriptor[UK, UV]) Validate() error {
	return errors.Join(checkName(d.Name), checkCodec(d.UserKeyCodec, d.Name, "UserKeyCodec"), checkCodec(d.ValueCodec, d.Name, "ValueCodec"))
}

// Validate is ValueDescriptor.Validate, and Reduce must be set.
func (d ReducingDescriptor[V]) Validate() error {
	var noFn error
	if d.Reduce == nil {
		noFn = fmt.Errorf("state %q: descriptor has no Reduce function", d.Name)
	}
	return errors.Join(checkName(d.Name), checkCodec(d.Codec, d.Name, "Codec"), noFn)
}

// Validate is ValueDescriptor.Validate for AccCodec, and Create, Add and
// Result must be set.
func (d AggregatingDescriptor[IN, ACC, OUT]) Validate() error {
	var noFn error
	if d.Create == nil || d.Add == nil || d.Result == nil {
		noFn = fmt.Errorf("state %q: descriptor has no Create, Add or Result function", d.Name)
	}
	return errors.Join(checkName(d.Name), checkCodec(d.AccCodec, d.Name, "AccCodec"), noFn)
}

// Validate is ValueDescriptor.Validate, for both codecs.
func (d BroadcastDescriptor[K, V]) Validate() error {
	return errors.Join(checkName(d.Name), checkCodec(d.KeyCodec, d.Name, "KeyCodec"), checkCodec(d.ValueCodec, d.Name, "ValueCodec"))
}
