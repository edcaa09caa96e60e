package codec

import (
	"reflect"
	"strconv"
	"time"
	"unsafe"
)

// A node is the compiled codec of one type: closures that encode the value
// at p and decode into the value at p. Decoders overwrite every byte they
// own (slices, maps and pointers are freshly allocated), so a node can decode
// into memory that already holds a value, such as a reused scratch map key.
type node struct {
	enc  func(dst []byte, p unsafe.Pointer) []byte
	dec  func(src []byte, p unsafe.Pointer) (int, error)
	min  int     // fewest bytes a value encodes to, for bounding counts
	size uintptr // the Go size of the type
	raw  bool    // the value's memory is exactly its encoding
}

var timeType = reflect.TypeFor[time.Time]()

func compileType(t reflect.Type) (*node, error) {
	c := compiler{root: t, visiting: map[reflect.Type]bool{}}
	return c.compile(t, t.String())
}

type compiler struct {
	root     reflect.Type
	visiting map[reflect.Type]bool // types being compiled, to reject recursion
}

func (c *compiler) fail(path, reason string) error {
	return &DeriveError{Type: c.root, Path: path, Reason: reason}
}

func (c *compiler) compile(t reflect.Type, path string) (*node, error) {
	if t.Kind() == reflect.Struct && t.ConvertibleTo(timeType) {
		return timeNode, nil // time.Time or a named type over it
	}
	if c.visiting[t] {
		// Supporting recursion would need a depth limit on decode so that
		// corrupt input cannot nest without bound; no job has needed it.
		return nil, c.fail(path, "recursive type "+t.String())
	}
	c.visiting[t] = true
	defer delete(c.visiting, t)

	switch t.Kind() {
	case reflect.Bool:
		return boolNode, nil
	case reflect.Int8, reflect.Uint8:
		return fixed1Node, nil
	case reflect.Int16, reflect.Uint16:
		return fixed2Node, nil
	case reflect.Int32, reflect.Uint32, reflect.Float32:
		return fixed4Node, nil
	case reflect.Int64, reflect.Uint64, reflect.Float64:
		return fixed8Node, nil
	case reflect.Int:
		if strconv.IntSize == 64 {
			return fixed8Node, nil
		}
		return int32BitNode, nil
	case reflect.Uint:
		if strconv.IntSize == 64 {
			return fixed8Node, nil
		}
		return uint32BitNode, nil
	case reflect.String:
		return stringNode, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return bytesNode, nil // []byte or []NamedByte: same memory
		}
		elem, err := c.compile(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return sliceNode(t, elem), nil
	case reflect.Array:
		elem, err := c.compile(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return arrayNode(t, elem), nil
	case reflect.Map:
		key, err := c.compile(t.Key(), path+"[key]")
		if err != nil {
			return nil, err
		}
		val, err := c.compile(t.Elem(), path+"[value]")
		if err != nil {
			return nil, err
		}
		return mapNode(t, key, val), nil
	case reflect.Pointer:
		elem, err := c.compile(t.Elem(), "(*"+path+")")
		if err != nil {
			return nil, err
		}
		return pointerNode(t, elem), nil
	case reflect.Struct:
		return c.compileStruct(t, path)
	}
	return nil, c.fail(path, t.String())
}

func (c *compiler) compileStruct(t reflect.Type, path string) (*node, error) {
	type op struct {
		off uintptr
		n   *node
	}
	var ops []op
	min := 0
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Name == "_" {
			continue // padding or a marker: no value to keep
		}
		if !f.IsExported() {
			return nil, c.fail(path+"."+f.Name, "unexported field of type "+f.Type.String())
		}
		n, err := c.compile(f.Type, path+"."+f.Name)
		if err != nil {
			return nil, err
		}
		if n.size == 0 {
			continue // zero-size values encode to nothing
		}
		min += n.min
		// Adjacent raw fields with no padding between them become one copy.
		if last := len(ops) - 1; n.raw && last >= 0 && ops[last].n.raw &&
			ops[last].off+ops[last].n.size == f.Offset {
			ops[last].n = rawNode(ops[last].n.size + n.size)
			continue
		}
		ops = append(ops, op{f.Offset, n})
	}
	switch {
	case len(ops) == 0:
		return &node{enc: encodeNothing, dec: decodeNothing, size: t.Size(), raw: t.Size() == 0}, nil
	case len(ops) == 1 && ops[0].off == 0 && ops[0].n.size == t.Size():
		// One field, or one raw run covering the whole struct.
		n := *ops[0].n
		return &n, nil
	}
	fields := make([]fieldOp, len(ops))
	for i, o := range ops {
		fields[i] = newFieldOp(o.off, o.n)
	}
	return &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte {
			for i := range fields {
				dst = fields[i].encode(dst, p)
			}
			return dst
		},
		dec: func(src []byte, p unsafe.Pointer) (int, error) {
			n := 0
			for i := range fields {
				m, err := fields[i].decode(src[n:], p)
				if err != nil {
					return 0, err
				}
				n += m
			}
			return n, nil
		},
		min:  min,
		size: t.Size(),
	}, nil
}

// fieldOp is one step of a struct codec. The commonest fields (8-byte
// numbers, copied runs, strings) are handled inline by a switch rather than
// through an indirect call, which halves the cost of small structs.
type fieldOp struct {
	kind fieldKind
	off  uintptr
	size uintptr // for fieldRaw
	enc  func([]byte, unsafe.Pointer) []byte
	dec  func([]byte, unsafe.Pointer) (int, error)
}

type fieldKind uint8

const (
	fieldCall fieldKind = iota
	fieldFixed8
	fieldRaw
	fieldString
)

func newFieldOp(off uintptr, n *node) fieldOp {
	op := fieldOp{kind: fieldCall, off: off, size: n.size, enc: n.enc, dec: n.dec}
	switch {
	case n == fixed8Node:
		op.kind = fieldFixed8
	case n == stringNode:
		op.kind = fieldString
	case n.raw:
		op.kind = fieldRaw
	}
	return op
}

func (f *fieldOp) encode(dst []byte, p unsafe.Pointer) []byte {
	q := unsafe.Add(p, f.off)
	switch f.kind {
	case fieldFixed8:
		return le.AppendUint64(dst, *(*uint64)(q))
	case fieldRaw:
		return append(dst, unsafe.Slice((*byte)(q), f.size)...)
	case fieldString:
		return appendString(dst, *(*string)(q))
	}
	return f.enc(dst, q)
}

func (f *fieldOp) decode(src []byte, p unsafe.Pointer) (n int, err error) {
	q := unsafe.Add(p, f.off)
	switch f.kind {
	case fieldFixed8:
		if len(src) < 8 {
			return 0, ErrTruncated
		}
		*(*uint64)(q) = le.Uint64(src)
		return 8, nil
	case fieldRaw:
		if uintptr(len(src)) < f.size {
			return 0, ErrTruncated
		}
		copy(unsafe.Slice((*byte)(q), f.size), src)
		return int(f.size), nil
	case fieldString:
		*(*string)(q), n, err = decodeString(src)
		return n, err
	}
	return f.dec(src, q)
}

func encodeNothing(dst []byte, _ unsafe.Pointer) []byte     { return dst }
func decodeNothing(_ []byte, _ unsafe.Pointer) (int, error) { return 0, nil }

// rawNode copies size bytes of memory as the encoding. Only built on
// little-endian machines for types without padding or invalid bit patterns.
func rawNode(size uintptr) *node {
	return &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte {
			return append(dst, unsafe.Slice((*byte)(p), size)...)
		},
		dec: func(src []byte, p unsafe.Pointer) (int, error) {
			if uintptr(len(src)) < size {
				return 0, ErrTruncated
			}
			copy(unsafe.Slice((*byte)(p), size), src)
			return int(size), nil
		},
		min: int(size), size: size, raw: true,
	}
}

func arrayNode(t reflect.Type, elem *node) *node {
	length, esize := uintptr(t.Len()), elem.size
	if elem.raw && littleEndian {
		return rawNode(t.Size())
	}
	if t.Size() == 0 {
		return &node{enc: encodeNothing, dec: decodeNothing}
	}
	enc, dec := elem.enc, elem.dec
	return &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte {
			for i := range length {
				dst = enc(dst, unsafe.Add(p, i*esize))
			}
			return dst
		},
		dec: func(src []byte, p unsafe.Pointer) (int, error) {
			n := 0
			for i := range length {
				m, err := dec(src[n:], unsafe.Add(p, i*esize))
				if err != nil {
					return 0, err
				}
				n += m
			}
			return n, nil
		},
		min:  int(length) * elem.min,
		size: t.Size(),
	}
}

func sliceNode(t reflect.Type, elem *node) *node {
	esize, emin, raw := elem.size, elem.min, elem.raw && littleEndian
	enc, dec := elem.enc, elem.dec
	return &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte {
			h := (*sliceHeader)(p)
			dst = appendNilLen(dst, h.len, h.data == nil)
			if raw {
				return append(dst, unsafe.Slice((*byte)(h.data), uintptr(h.len)*esize)...)
			}
			for i := range uintptr(h.len) {
				dst = enc(dst, unsafe.Add(h.data, i*esize))
			}
			return dst
		},
		dec: func(src []byte, p unsafe.Pointer) (int, error) {
			h := (*sliceHeader)(p)
			*h = sliceHeader{}
			count, isNil, n, err := readNilLen(src)
			if err != nil || isNil {
				return n, err
			}
			if err := checkCount(count, len(src)-n, emin, esize); err != nil {
				return 0, err
			}
			if count == 0 {
				h.data = unsafe.Pointer(&emptyBacking)
				return n, nil
			}
			// Grow allocates the backing array of the right element type,
			// zeroed, straight into *h: one allocation.
			s := reflect.NewAt(t, p).Elem()
			s.Grow(count)
			s.SetLen(count)
			switch {
			case esize == 0:
				return n, nil
			case raw:
				size := count * int(esize)
				copy(unsafe.Slice((*byte)(h.data), size), src[n:n+size])
				return n + size, nil
			}
			for i := range uintptr(count) {
				m, err := dec(src[n:], unsafe.Add(h.data, i*esize))
				if err != nil {
					*h = sliceHeader{}
					return 0, err
				}
				n += m
			}
			return n, nil
		},
		min: 1, size: t.Size(),
	}
}

// mapNode goes through package reflect per entry: a map's layout is private
// to the runtime and Go cannot instantiate Map[K, V] from a reflect.Type.
func mapNode(t reflect.Type, key, val *node) *node {
	kt, vt := t.Key(), t.Elem()
	min := max(key.min+val.min, 1)
	return &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte {
			m := reflect.NewAt(t, p).Elem()
			dst = appendNilLen(dst, m.Len(), m.IsNil())
			if m.Len() == 0 {
				return dst
			}
			kp, vp := reflect.New(kt), reflect.New(vt)
			k, v := kp.Elem(), vp.Elem()
			var it reflect.MapIter
			it.Reset(m)
			for it.Next() {
				k.SetIterKey(&it)
				v.SetIterValue(&it)
				dst = key.enc(dst, kp.UnsafePointer())
				dst = val.enc(dst, vp.UnsafePointer())
			}
			return dst
		},
		dec: func(src []byte, p unsafe.Pointer) (int, error) {
			*(*unsafe.Pointer)(p) = nil
			count, isNil, n, err := readNilLen(src)
			if err != nil || isNil {
				return n, err
			}
			if count > 1 { // zero-width entries: a second one is a duplicate
				if err := checkCount(count, len(src)-n, min, 0); err != nil {
					return 0, err
				}
			}
			m := reflect.MakeMapWithSize(t, count)
			kp, vp := reflect.New(kt), reflect.New(vt)
			k, v := kp.Elem(), vp.Elem()
			for i := range count {
				kn, err := key.dec(src[n:], kp.UnsafePointer())
				if err != nil {
					return 0, err
				}
				n += kn
				vn, err := val.dec(src[n:], vp.UnsafePointer())
				if err != nil {
					return 0, err
				}
				n += vn
				m.SetMapIndex(k, v)
				if m.Len() != i+1 {
					return 0, errDuplicateKey
				}
			}
			*(*unsafe.Pointer)(p) = m.UnsafePointer()
			return n, nil
		},
		min: 1, size: t.Size(),
	}
}

func pointerNode(t reflect.Type, elem *node) *node {
	et := t.Elem()
	return &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte {
			q := *(*unsafe.Pointer)(p)
			if q == nil {
				return append(dst, 0)
			}
			return elem.enc(append(dst, 1), q)
		},
		dec: func(src []byte, p unsafe.Pointer) (int, error) {
			*(*unsafe.Pointer)(p) = nil
			if len(src) < 1 {
				return 0, ErrTruncated
			}
			switch src[0] {
			case 0:
				return 1, nil
			case 1:
			default:
				return 0, errPointerFlag
			}
			q := reflect.New(et).UnsafePointer()
			n, err := elem.dec(src[1:], q)
			if err != nil {
				return 0, err
			}
			*(*unsafe.Pointer)(p) = q
			return n + 1, nil
		},
		min: 1, size: t.Size(),
	}
}

// Leaf nodes, shared by every compiled type. They produce the same bytes as
// the hand-written codecs.
var (
	fixed1Node = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return append(dst, *(*byte)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (int, error) {
			if len(src) < 1 {
				return 0, ErrTruncated
			}
			*(*byte)(p) = src[0]
			return 1, nil
		},
		min: 1, size: 1, raw: littleEndian,
	}
	fixed2Node = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return le.AppendUint16(dst, *(*uint16)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (int, error) {
			if len(src) < 2 {
				return 0, ErrTruncated
			}
			*(*uint16)(p) = le.Uint16(src)
			return 2, nil
		},
		min: 2, size: 2, raw: littleEndian,
	}
	fixed4Node = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return le.AppendUint32(dst, *(*uint32)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (int, error) {
			if len(src) < 4 {
				return 0, ErrTruncated
			}
			*(*uint32)(p) = le.Uint32(src)
			return 4, nil
		},
		min: 4, size: 4, raw: littleEndian,
	}
	fixed8Node = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return le.AppendUint64(dst, *(*uint64)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (int, error) {
			if len(src) < 8 {
				return 0, ErrTruncated
			}
			*(*uint64)(p) = le.Uint64(src)
			return 8, nil
		},
		min: 8, size: 8, raw: littleEndian,
	}
	// int and uint on 32-bit platforms: 8 bytes on the wire, range-checked.
	int32BitNode = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return Int().AppendEncode(dst, *(*int)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (n int, err error) {
			*(*int)(p), n, err = Int().Decode(src)
			return n, err
		},
		min: 8, size: unsafe.Sizeof(int(0)),
	}
	uint32BitNode = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return Uint().AppendEncode(dst, *(*uint)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (n int, err error) {
			*(*uint)(p), n, err = Uint().Decode(src)
			return n, err
		},
		min: 8, size: unsafe.Sizeof(uint(0)),
	}
	boolNode = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return Bool().AppendEncode(dst, *(*bool)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (n int, err error) {
			*(*bool)(p), n, err = Bool().Decode(src)
			return n, err
		},
		min: 1, size: 1,
	}
	stringNode = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return appendString(dst, *(*string)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (n int, err error) {
			*(*string)(p), n, err = decodeString(src)
			return n, err
		},
		min: 1, size: unsafe.Sizeof(""),
	}
	bytesNode = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return appendBytes(dst, *(*[]byte)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (n int, err error) {
			*(*[]byte)(p), n, err = decodeBytes(src)
			return n, err
		},
		min: 1, size: unsafe.Sizeof([]byte(nil)),
	}
	timeNode = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return appendTime(dst, *(*time.Time)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (n int, err error) {
			*(*time.Time)(p), n, err = decodeTime(src)
			return n, err
		},
		min: timeSize, size: unsafe.Sizeof(time.Time{}),
	}
)
