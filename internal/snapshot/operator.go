package snapshot

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sort"
)

// OperatorState is one non-keyed state of an operator subtask: its
// elements, each encoded by the state's codec (broadcast entries: uvarint
// key length, key, value).
type OperatorState struct {
	Name     string
	Kind     Kind // KindOperatorList, KindOperatorUnion or KindBroadcast
	Elements [][]byte
	// Codec identifies the elements' codec (as StateMeta.Codec; broadcast
	// state: "K -> V"); "" unknown (format version 1), not checked.
	Codec string
	// Schema and KeySchema are as StateMeta's (broadcast state: key and
	// value); "" none recorded (format version 2 and before).
	Schema    string
	KeySchema string
}

// OperatorSnapshot is the non-keyed state of one operator subtask.
type OperatorSnapshot struct {
	States []OperatorState
}

const (
	operatorMagic = "WEIROPS\x00"
	// operatorVersion 2 added each state's codec identity after its kind;
	// version 1 (testdata/operator-v1.bin) still decodes, without it.
	// Version 3 added the schemas after the codec identity.
	operatorVersion    = 3
	minOperatorVersion = 1
)

// EncodeOperator encodes an operator snapshot:
//
//	magic "WEIROPS\x00" | version u16 | payload length u32 | payload | CRC32C u32 of all before
//	payload: uvarint count, per state: name, kind byte, codec (version 2 on),
//	schema and key schema (version 3 on), uvarint element count, elements (names, codecs and elements are uvarint
//	length + bytes)
func EncodeOperator(s OperatorSnapshot) []byte {
	var p []byte
	p = binary.AppendUvarint(p, uint64(len(s.States)))
	for _, st := range s.States {
		p = appendBytes(p, []byte(st.Name))
		p = append(p, byte(st.Kind))
		p = appendBytes(p, []byte(st.Codec))
		p = appendBytes(p, []byte(st.Schema))
		p = appendBytes(p, []byte(st.KeySchema))
		p = binary.AppendUvarint(p, uint64(len(st.Elements)))
		for _, e := range st.Elements {
			p = appendBytes(p, e)
		}
	}
	b := append([]byte(operatorMagic), 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint16(b[8:], operatorVersion)
	binary.BigEndian.PutUint32(b[10:], uint32(len(p)))
	b = append(b, p...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// DecodeOperator decodes EncodeOperator's output; corrupt input gives a *CorruptError.
func DecodeOperator(b []byte) (OperatorSnapshot, error) {
	var s OperatorSnapshot
	const part = "operator snapshot"
	if len(b) < 18 {
		return s, corrupt(part, "%d bytes is shorter than header and checksum", len(b))
	}
	if string(b[:8]) != operatorMagic {
		return s, corrupt(part, "bad magic %q", b[:8])
	}
	v := binary.BigEndian.Uint16(b[8:])
	if v < minOperatorVersion || v > operatorVersion {
		return s, corrupt(part, "unsupported version %d (this build reads %d to %d)", v, minOperatorVersion, operatorVersion)
	}
	n := binary.BigEndian.Uint32(b[10:])
	if uint64(n)+18 != uint64(len(b)) {
		return s, corrupt(part, "payload length %d does not match size %d", n, len(b))
	}
	if got, want := crc32.Checksum(b[:len(b)-4], castagnoli), binary.BigEndian.Uint32(b[len(b)-4:]); got != want {
		return s, corrupt(part, "checksum mismatch (computed %08x, stored %08x)", got, want)
	}
	d := &dec{b: b[14 : len(b)-4], part: part}
	count := d.uvarint("state count")
	if count > uint64(len(d.b)) {
		return s, corrupt(part, "state count %d exceeds payload", count)
	}
	for i := uint64(0); i < count && d.err == nil; i++ {
		st := OperatorState{Name: string(d.bytes("state name")), Kind: Kind(d.byte1("state kind"))}
		if v >= 2 {
			st.Codec = string(d.bytes("codec"))
		}
		if v >= 3 {
			st.Schema, st.KeySchema = string(d.bytes("schema")), string(d.bytes("key schema"))
		}
		ne := d.uvarint("element count")
		if d.err == nil && ne > uint64(len(d.b)) {
			return s, corrupt(part, "state %q: element count %d exceeds payload", st.Name, ne)
		}
		for j := uint64(0); j < ne && d.err == nil; j++ {
			st.Elements = append(st.Elements, append([]byte(nil), d.bytes("element")...))
		}
		if d.err == nil && st.Kind != KindOperatorList && st.Kind != KindOperatorUnion && st.Kind != KindBroadcast {
			return s, corrupt(part, "state %q has kind %s, not an operator state kind", st.Name, st.Kind)
		}
		s.States = append(s.States, st)
	}
	if d.err == nil && len(d.b) != 0 {
		return s, corrupt(part, "%d trailing bytes", len(d.b))
	}
	return s, d.err
}

// RedistributeOperator assigns the operator state of old subtasks (in
// subtask order) to newParallelism new subtasks, as on a rescale:
//
//   - list state (KindOperatorList): the elements of all old subtasks, in
//     order, are cut into newParallelism contiguous runs whose lengths differ
//     by at most one (the first ones get the extra elements);
//   - union list state: every new subtask gets all elements;
//   - broadcast state: every new subtask gets old subtask 0's copy (all
//     copies are equal).
//
// Every new subtask's snapshot lists every state, sorted by name, even when
// it gets no elements. Two old subtasks disagreeing on a state's kind is an error.
func RedistributeOperator(old []OperatorSnapshot, newParallelism int) ([]OperatorSnapshot, error) {
	if newParallelism < 1 {
		return nil, fmt.Errorf("snapshot: new parallelism %d", newParallelism)
	}
	type merged struct {
		kind      Kind
		codec     string
		schema    string
		keySchema string
		elems     [][]byte
		first     bool // broadcast: a copy was taken already
	}
	all := map[string]*merged{}
	for i, o := range old {
		for _, st := range o.States {
			m := all[st.Name]
			if m == nil {
				m = &merged{kind: st.Kind, codec: st.Codec, schema: st.Schema, keySchema: st.KeySchema}
				all[st.Name] = m
			} else if m.kind != st.Kind {
				return nil, fmt.Errorf("snapshot: operator state %q is %s in one subtask and %s in subtask %d", st.Name, m.kind, st.Kind, i)
			} else if CodecMismatch(m.codec, st.Codec) {
				return nil, fmt.Errorf("snapshot: operator state %q has codec %q in one subtask and %q in subtask %d", st.Name, m.codec, st.Codec, i)
			} else if (m.schema != "" && st.Schema != "" && m.schema != st.Schema) || (m.keySchema != "" && st.KeySchema != "" && m.keySchema != st.KeySchema) {
				return nil, fmt.Errorf("snapshot: operator state %q has different schemas in one subtask and in subtask %d", st.Name, i)
			} else if m.codec == "" {
				m.codec = st.Codec
			}
			if st.Kind == KindBroadcast {
				if !m.first {
					m.elems, m.first = st.Elements, true
				}
				continue
			}
			m.elems = append(m.elems, st.Elements...)
		}
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]OperatorSnapshot, newParallelism)
	for _, n := range names {
		m := all[n]
		total := len(m.elems)
		start := 0
		for i := range out {
			st := OperatorState{Name: n, Kind: m.kind, Codec: m.codec, Schema: m.schema, KeySchema: m.keySchema}
			switch m.kind {
			case KindOperatorList:
				size := total / newParallelism
				if i < total%newParallelism {
					size++
				}
				st.Elements = m.elems[start : start+size : start+size]
				start += size
			default:
				st.Elements = m.elems
			}
			out[i].States = append(out[i].States, st)
		}
	}
	return out, nil
}
