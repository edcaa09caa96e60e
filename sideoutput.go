package weir

import (
	"fmt"

	"github.com/weirhq/weir/internal/operator"
)

// OutputTag names a side output of type T, as Flink's OutputTag: an operator
// emits to it besides its main output (process functions with Output, windows
// with their late data), and SideOutput reads it as a stream.
type OutputTag[T any] struct{ id string }

// NewOutputTag returns the tag id of a side output of type T. IDs are unique
// per operator: one ID must not name side outputs of two types.
func NewOutputTag[T any](id string) OutputTag[T] {
	if id == "" {
		panic("weir: an OutputTag needs a non-empty id")
	}
	return OutputTag[T]{id: id}
}

// ID is the tag's id.
func (t OutputTag[T]) ID() string { return t.id }

// Output emits v with the current element's timestamp to the side output of
// the operator whose function got ctx. Nothing happens if the job reads no
// such side output of that operator.
func (t OutputTag[T]) Output(ctx Context, v T) {
	oc, ok := ctx.(interface{ op() *operator.Context })
	if !ok {
		panic(fmt.Sprintf("weir: OutputTag %q: %T is not a context the runtime gave", t.id, ctx))
	}
	c := oc.op()
	if in, _ := c.SideOutput(t.id).(operator.Input[T]); in != nil {
		in.ProcessElement(v, ctx.Timestamp())
		c.Enter()
	}
}

// SideOutput is the stream of the side output tag of the operator that
// produced s (Flink's getSideOutput).
func SideOutput[T, U any](s DataStream[U], tag OutputTag[T]) DataStream[T] {
	n := s.last()
	st := operator.NewStreamType[T](nil)
	if old, ok := n.SideTypes[tag.id]; ok {
		if old.(operator.StreamType).TypeName() != st.TypeName() {
			s.env.fail(fmt.Errorf("weir: operator %q: side output %q is read as %s and as %s; one tag ID, one type",
				n.Name, tag.id, old.(operator.StreamType).TypeName(), st.TypeName()))
		}
	} else {
		if n.SideTypes == nil {
			n.SideTypes = map[string]any{}
		}
		n.SideTypes[tag.id] = st
	}
	return DataStream[T]{env: s.env, ends: []end{{node: n, selector: roundRobin[T], tag: tag.id}}}
}

// sideInput returns the operator's side output of tag as an Input[T]
// (discarding when the job does not read it).
func sideInput[T any](c *operator.Context, tag string) operator.Input[T] {
	if in, ok := c.SideOutput(tag).(operator.Input[T]); ok {
		return in
	}
	return discardInput[T]{}
}
