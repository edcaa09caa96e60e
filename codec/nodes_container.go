package codec

import (
	"reflect"
	"unsafe"
)

// Nodes for composite types. Element nodes are called through closures;
// runs of raw elements are copied whole.

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
