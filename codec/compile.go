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
	// The switches are written out in the loops, not in methods, so that a
	// field costs no call unless it needs one.
	return &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte {
			for i := range fields {
				f := &fields[i]
				q := unsafe.Add(p, f.off)
				switch f.kind {
				case fieldFixed8:
					dst = le.AppendUint64(dst, *(*uint64)(q))
				case fieldRaw:
					dst = append(dst, unsafe.Slice((*byte)(q), f.size)...)
				case fieldString:
					dst = appendString(dst, *(*string)(q))
				default:
					dst = f.enc(dst, q)
				}
			}
			return dst
		},
		dec: func(src []byte, p unsafe.Pointer) (int, error) {
			n := 0
			for i := range fields {
				f := &fields[i]
				q := unsafe.Add(p, f.off)
				switch f.kind {
				case fieldFixed8:
					if len(src)-n < 8 {
						return 0, ErrTruncated
					}
					*(*uint64)(q) = le.Uint64(src[n:])
					n += 8
				case fieldRaw:
					if uintptr(len(src)-n) < f.size {
						return 0, ErrTruncated
					}
					n += copy(unsafe.Slice((*byte)(q), f.size), src[n:])
				case fieldString:
					s, m, err := decodeString(src[n:])
					if err != nil {
						return 0, err
					}
					*(*string)(q) = s
					n += m
				default:
					m, err := f.dec(src[n:], q)
					if err != nil {
						return 0, err
					}
					n += m
				}
			}
			return n, nil
		},
		min:  min,
		size: t.Size(),
	}, nil
}

// fieldOp is one step of a struct codec. The commonest fields (8-byte
// numbers, copied runs, strings) are handled inline by a switch rather than
// through an indirect call, which roughly halves the cost of small structs.
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

func encodeNothing(dst []byte, _ unsafe.Pointer) []byte     { return dst }
func decodeNothing(_ []byte, _ unsafe.Pointer) (int, error) { return 0, nil }
