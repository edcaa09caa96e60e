package weir

// taggedUnion carries an element of either input of a window join through
// one keyed window (Flink's TaggedUnion): One when IsOne, else Two. Its codec
// is derived from A and B, so both must have derivable codecs; its fields
// are exported because derived codecs refuse unexported fields.
type taggedUnion[A, B any] struct {
	One   A
	Two   B
	IsOne bool
}

// JoinedStreams are two streams joined on equal keys (Flink's
// a.join(b).where(keyA).equalTo(keyB)); give them a window with Window.
type JoinedStreams[K comparable, A, B any] struct {
	a       DataStream[A]
	b       DataStream[B]
	where   func(A) K
	equalTo func(B) K
}

// Join joins a and b on where(a) == equalTo(b), per window (see
// JoinedStreams.Window, WindowJoin and WindowCoGroup).
func Join[K comparable, A, B any](a DataStream[A], b DataStream[B], where func(A) K, equalTo func(B) K) JoinedStreams[K, A, B] {
	return JoinedStreams[K, A, B]{a: a, b: b, where: where, equalTo: equalTo}
}

// Window sets the windows the join pairs elements in: tumbling, sliding or
// session windows, as for a keyed stream.
func (j JoinedStreams[K, A, B]) Window(a WindowAssigner) WindowedJoin[K, A, B] {
	return WindowedJoin[K, A, B]{j: j, assigner: a}
}

// WindowedJoin is a window join or co-group with its windows.
type WindowedJoin[K comparable, A, B any] struct {
	j        JoinedStreams[K, A, B]
	assigner WindowAssigner
}

// JoinFunction handles one pair of a window join (Flink's FlatJoinFunction:
// it may emit any number of elements).
type JoinFunction[A, B, U any] interface {
	Join(first A, second B, out Collector[U]) error
}

// JoinFunc adapts a function to JoinFunction.
type JoinFunc[A, B, U any] func(first A, second B, out Collector[U]) error

// Join implements JoinFunction.
func (f JoinFunc[A, B, U]) Join(first A, second B, out Collector[U]) error {
	return f(first, second, out)
}

// CoGroupFunction gets both inputs' elements of one key and window; one of
// the two may be empty (but not both).
type CoGroupFunction[A, B, U any] interface {
	CoGroup(first []A, second []B, out Collector[U]) error
}

// CoGroupFunc adapts a function to CoGroupFunction.
type CoGroupFunc[A, B, U any] func(first []A, second []B, out Collector[U]) error

// CoGroup implements CoGroupFunction.
func (f CoGroupFunc[A, B, U]) CoGroup(first []A, second []B, out Collector[U]) error {
	return f(first, second, out)
}

// WindowCoGroup runs fn on each key's and window's elements of both inputs
// when the window fires. As in Flink, it is a keyed window over the tagged
// union of the inputs; results carry the window's max timestamp.
func WindowCoGroup[K comparable, A, B, U any](w WindowedJoin[K, A, B], fn CoGroupFunction[A, B, U]) DataStream[U] {
	checkHooks(w.j.a.env, "WindowCoGroup", fn, openCloseHooks())
	one := Map(w.j.a, func(a A) taggedUnion[A, B] { return taggedUnion[A, B]{One: a, IsOne: true} }).Name("Join-Tag-First")
	two := Map(w.j.b, func(b B) taggedUnion[A, B] { return taggedUnion[A, B]{Two: b} }).Name("Join-Tag-Second")
	where, equalTo := w.j.where, w.j.equalTo
	ks := KeyBy(Union(one, two), func(u taggedUnion[A, B]) K {
		if u.IsOne {
			return where(u.One)
		}
		return equalTo(u.Two)
	})
	return WindowProcess(Window(ks, w.assigner), &coGroupWindow[K, A, B, U]{fn: fn}).Name("Window-CoGroup")
}

// WindowJoin emits fn's results for every pair of elements (one per input)
// with equal keys in one window: the cross product per key and window.
func WindowJoin[K comparable, A, B, U any](w WindowedJoin[K, A, B], fn JoinFunction[A, B, U]) DataStream[U] {
	checkHooks(w.j.a.env, "WindowJoin", fn, openCloseHooks())
	return WindowCoGroup(w, &crossProduct[A, B, U]{fn: fn}).Name("Window-Join")
}

// coGroupWindow splits a window's tagged elements into the two sides. The
// split slices are kept for the next firing (one subtask, one goroutine).
type coGroupWindow[K comparable, A, B, U any] struct {
	fn CoGroupFunction[A, B, U]
	as []A
	bs []B
}

func (c *coGroupWindow[K, A, B, U]) Open(ctx RuntimeContext) error {
	c.fn = instanceOf(c.fn)
	if op, ok := c.fn.(Opener); ok {
		return op.Open(ctx)
	}
	return nil
}

func (c *coGroupWindow[K, A, B, U]) Close() error { return closeFn(c.fn) }

func (c *coGroupWindow[K, A, B, U]) Process(_ WindowContext[K], els []taggedUnion[A, B], out Collector[U]) error {
	as, bs := c.as[:0], c.bs[:0]
	for i := range els {
		if els[i].IsOne {
			as = append(as, els[i].One)
		} else {
			bs = append(bs, els[i].Two)
		}
	}
	c.as, c.bs = as, bs
	return c.fn.CoGroup(as, bs, out)
}

type crossProduct[A, B, U any] struct{ fn JoinFunction[A, B, U] }

func (c *crossProduct[A, B, U]) Open(ctx RuntimeContext) error {
	c.fn = instanceOf(c.fn)
	if op, ok := c.fn.(Opener); ok {
		return op.Open(ctx)
	}
	return nil
}

func (c *crossProduct[A, B, U]) Close() error { return closeFn(c.fn) }

func (c *crossProduct[A, B, U]) CoGroup(as []A, bs []B, out Collector[U]) error {
	for i := range as {
		for j := range bs {
			if err := c.fn.Join(as[i], bs[j], out); err != nil {
				return err
			}
		}
	}
	return nil
}
