package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Schema describes how a codec lays out values: enough to read bytes
// written under it without the Go type that wrote them, and to decide
// whether bytes written under one schema can be read, or migrated, under
// another. State backends record the schema of each state's codec in
// snapshots and compare it on restore (see Compare).
//
// Schemas of derived codecs (For) describe the wire format in the package
// doc exactly, so Weir can migrate their bytes itself (Transcoder). A
// codec from elsewhere may declare a schema (SchemaDeclarer); Weir
// compares a declared schema but never reads bytes by it, so a change of a
// declared schema needs the codec's own migration (Migrator).
type Schema struct {
	Kind SchemaKind
	// Type is the Go type's name ("main.Event", "int64"), for messages
	// only: types are matched by Kind and structure, not by name, so a
	// renamed struct type keeps its state. For SchemaOpaque it is part of
	// the identity, with Version.
	Type    string
	Fields  []Field // SchemaStruct: the encoded fields in wire order
	Elem    *Schema // SchemaSlice, SchemaArray and SchemaPointer: the element; SchemaMap: the value
	Key     *Schema // SchemaMap: the key
	Len     int     // SchemaArray: the length
	Version int     // SchemaOpaque: the codec's format version

	declared bool // declared by a codec (SchemaDeclarer), not derived by For
}

// Field is one encoded field of a struct schema. Fields are matched by
// Name between schemas.
type Field struct {
	Name   string
	Schema Schema
}

// SchemaKind is the kind of a Schema. The numbers are persisted in
// snapshots: never renumber, only add.
type SchemaKind uint8

// Schema kinds. Integer kinds have their fixed width on the wire (int and
// uint: 8 bytes); time.Duration and other named numbers have the kind of
// their underlying type.
const (
	SchemaBool SchemaKind = iota + 1
	SchemaInt8
	SchemaInt16
	SchemaInt32
	SchemaInt64
	SchemaInt
	SchemaUint8
	SchemaUint16
	SchemaUint32
	SchemaUint64
	SchemaUint
	SchemaFloat32
	SchemaFloat64
	SchemaString
	SchemaBytes
	SchemaTime
	SchemaStruct
	SchemaSlice
	SchemaArray
	SchemaMap
	SchemaPointer
	// SchemaOpaque is a codec's own format, known by its Type and Version
	// alone: the schema a hand-written codec declares.
	SchemaOpaque
	maxSchemaKind = SchemaOpaque
)

var kindNames = [...]string{
	SchemaBool: "bool", SchemaInt8: "int8", SchemaInt16: "int16", SchemaInt32: "int32",
	SchemaInt64: "int64", SchemaInt: "int", SchemaUint8: "uint8", SchemaUint16: "uint16",
	SchemaUint32: "uint32", SchemaUint64: "uint64", SchemaUint: "uint", SchemaFloat32: "float32",
	SchemaFloat64: "float64", SchemaString: "string", SchemaBytes: "[]byte", SchemaTime: "time.Time",
	SchemaStruct: "struct", SchemaSlice: "slice", SchemaArray: "array", SchemaMap: "map",
	SchemaPointer: "pointer", SchemaOpaque: "opaque",
}

func (k SchemaKind) String() string {
	if k >= 1 && k <= maxSchemaKind {
		return kindNames[k]
	}
	return "schemakind(" + strconv.Itoa(int(k)) + ")"
}

// SchemaDeclarer is implemented by a codec that declares its own schema,
// typically a hand-written codec:
//
//	func (myCodec) Schema() codec.Schema {
//		return codec.Schema{Kind: codec.SchemaOpaque, Type: "shop.Order", Version: 2}
//	}
//
// Restoring a state written under a different declared schema needs the
// codec to implement Migrator as well; otherwise the restore fails.
type SchemaDeclarer interface {
	Schema() Schema
}

// Migrator is implemented by a codec that can read values written under an
// earlier schema of its state: restore calls Migrate once per stored value
// (list element, map value) whose recorded schema differs from the
// codec's, and stores the result encoded by the codec. old is the schema
// recorded in the snapshot: a derived codec's (see For) or an earlier
// declared one. data holds exactly one value's bytes. When a codec
// implements Migrator, Weir does not migrate its values itself.
type Migrator[T any] interface {
	Migrate(old Schema, data []byte) (T, error)
}

// Declared reports whether s was declared by a codec (SchemaDeclarer)
// rather than derived from a Go type by this package.
func (s Schema) Declared() bool { return s.declared }

// SchemaOf returns the schema of c's values: the declared one if c is a
// SchemaDeclarer, the derived one if c is this package's codec for T (from
// For or a basic codec such as Int64). Other codecs, such as compositions
// of codecs from elsewhere, have none (ok false).
func SchemaOf[T any](c Codec[T]) (s Schema, ok bool) {
	if d, isDecl := any(c).(SchemaDeclarer); isDecl {
		s = d.Schema()
		s.declared = true
		return s, true
	}
	switch any(c).(type) {
	case *derived[T], rawCodec[T]:
	default:
		if b := builtin[T](); b == nil || reflect.TypeOf(b) != reflect.TypeOf(c) {
			return Schema{}, false
		}
	}
	s, err := schemaOfType(reflect.TypeFor[T]())
	return s, err == nil
}

// schemaOfType mirrors compileType: the schema of the wire format For
// derives for t.
func schemaOfType(t reflect.Type) (Schema, error) {
	if t.Kind() == reflect.Struct && t.ConvertibleTo(timeType) {
		return Schema{Kind: SchemaTime, Type: t.String()}, nil
	}
	s := Schema{Type: t.String()}
	switch t.Kind() {
	case reflect.Bool:
		s.Kind = SchemaBool
	case reflect.Int8:
		s.Kind = SchemaInt8
	case reflect.Int16:
		s.Kind = SchemaInt16
	case reflect.Int32:
		s.Kind = SchemaInt32
	case reflect.Int64:
		s.Kind = SchemaInt64
	case reflect.Int:
		s.Kind = SchemaInt
	case reflect.Uint8:
		s.Kind = SchemaUint8
	case reflect.Uint16:
		s.Kind = SchemaUint16
	case reflect.Uint32:
		s.Kind = SchemaUint32
	case reflect.Uint64:
		s.Kind = SchemaUint64
	case reflect.Uint:
		s.Kind = SchemaUint
	case reflect.Float32:
		s.Kind = SchemaFloat32
	case reflect.Float64:
		s.Kind = SchemaFloat64
	case reflect.String:
		s.Kind = SchemaString
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			s.Kind = SchemaBytes
			break
		}
		s.Kind = SchemaSlice
		return s, s.setElem(t.Elem())
	case reflect.Array:
		s.Kind, s.Len = SchemaArray, t.Len()
		return s, s.setElem(t.Elem())
	case reflect.Pointer:
		s.Kind = SchemaPointer
		return s, s.setElem(t.Elem())
	case reflect.Map:
		s.Kind = SchemaMap
		k, err := schemaOfType(t.Key())
		if err != nil {
			return s, err
		}
		s.Key = &k
		return s, s.setElem(t.Elem())
	case reflect.Struct:
		s.Kind = SchemaStruct
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Name == "_" || f.Type.Size() == 0 {
				continue // encoded as nothing (see compileStruct)
			}
			fs, err := schemaOfType(f.Type)
			if err != nil {
				return s, err
			}
			s.Fields = append(s.Fields, Field{Name: f.Name, Schema: fs})
		}
	default:
		return s, fmt.Errorf("codec: no schema for %s", t)
	}
	return s, nil
}

func (s *Schema) setElem(t reflect.Type) error {
	e, err := schemaOfType(t)
	s.Elem = &e
	return err
}

// String renders s as Go-like type syntax, e.g.
// "main.Event{ID int64; Tags []string}".
func (s Schema) String() string {
	var b strings.Builder
	s.write(&b)
	return b.String()
}

func (s *Schema) write(b *strings.Builder) {
	switch s.Kind {
	case SchemaStruct:
		b.WriteString(s.Type)
		b.WriteString("{")
		for i, f := range s.Fields {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(f.Name)
			b.WriteString(" ")
			f.Schema.write(b)
		}
		b.WriteString("}")
	case SchemaSlice:
		b.WriteString("[]")
		s.Elem.write(b)
	case SchemaArray:
		fmt.Fprintf(b, "[%d]", s.Len)
		s.Elem.write(b)
	case SchemaPointer:
		b.WriteString("*")
		s.Elem.write(b)
	case SchemaMap:
		b.WriteString("map[")
		s.Key.write(b)
		b.WriteString("]")
		s.Elem.write(b)
	case SchemaOpaque:
		fmt.Fprintf(b, "%s@v%d", s.Type, s.Version)
	default:
		b.WriteString(s.name())
	}
}

// name is the type's name in messages: the Go type if recorded, else the kind.
func (s *Schema) name() string {
	if s.Type != "" {
		if s.Kind == SchemaOpaque {
			return fmt.Sprintf("%s@v%d", s.Type, s.Version)
		}
		return s.Type
	}
	return s.Kind.String()
}

// schemaFormat is the version of AppendBinary's output.
const schemaFormat = 1

// maxSchemaDepth bounds the nesting ParseSchema accepts.
const maxSchemaDepth = 64

// AppendBinary appends the persisted form of s:
//
//	format byte (1) | flags byte (1: declared) | node
//	node: kind byte | type (uvarint length + bytes) | by kind:
//	      struct: uvarint field count, per field: name (uvarint length + bytes), node
//	      slice, pointer: element node; array: uvarint length, element node
//	      map: key node, value node; opaque: uvarint version
func (s Schema) AppendBinary(dst []byte) []byte {
	var flags byte
	if s.declared {
		flags = 1
	}
	return s.appendNode(append(dst, schemaFormat, flags))
}

func (s *Schema) appendNode(dst []byte) []byte {
	dst = append(dst, byte(s.Kind))
	dst = appendString(dst, s.Type)
	switch s.Kind {
	case SchemaStruct:
		dst = binary.AppendUvarint(dst, uint64(len(s.Fields)))
		for i := range s.Fields {
			dst = appendString(dst, s.Fields[i].Name)
			dst = s.Fields[i].Schema.appendNode(dst)
		}
	case SchemaSlice, SchemaPointer:
		dst = s.Elem.appendNode(dst)
	case SchemaArray:
		dst = binary.AppendUvarint(dst, uint64(s.Len))
		dst = s.Elem.appendNode(dst)
	case SchemaMap:
		dst = s.Key.appendNode(dst)
		dst = s.Elem.appendNode(dst)
	case SchemaOpaque:
		dst = binary.AppendUvarint(dst, uint64(s.Version))
	}
	return dst
}

// ParseSchema decodes AppendBinary's output. The input comes from
// snapshots, so it is checked, never trusted.
func ParseSchema(b []byte) (Schema, error) {
	if len(b) < 2 || b[0] != schemaFormat || b[1] > 1 {
		return Schema{}, fmt.Errorf("%w: schema header", ErrCorrupt)
	}
	p := schemaParser{b: b[2:]}
	s, err := p.node(0)
	if err == nil && len(p.b) != 0 {
		err = fmt.Errorf("%w: %d trailing bytes after schema", ErrCorrupt, len(p.b))
	}
	s.declared = b[1] == 1
	return s, err
}

type schemaParser struct{ b []byte }

func (p *schemaParser) uvarint() (int, error) {
	v, n, err := readUvarint(p.b)
	if err != nil {
		return 0, err
	}
	if v > MaxLen {
		return 0, errTooLong
	}
	p.b = p.b[n:]
	return int(v), nil
}

func (p *schemaParser) str() (string, error) {
	s, n, err := decodeString(p.b)
	if err != nil {
		return "", err
	}
	p.b = p.b[n:]
	return s, nil
}

func (p *schemaParser) node(depth int) (s Schema, err error) {
	if depth > maxSchemaDepth {
		return s, fmt.Errorf("%w: schema nested deeper than %d", ErrCorrupt, maxSchemaDepth)
	}
	if len(p.b) < 1 {
		return s, ErrTruncated
	}
	s.Kind = SchemaKind(p.b[0])
	p.b = p.b[1:]
	if s.Kind < 1 || s.Kind > maxSchemaKind {
		return s, fmt.Errorf("%w: unknown schema kind %d", ErrCorrupt, s.Kind)
	}
	if s.Type, err = p.str(); err != nil {
		return s, err
	}
	elem := func() (*Schema, error) {
		e, err := p.node(depth + 1)
		return &e, err
	}
	switch s.Kind {
	case SchemaStruct:
		n, err := p.uvarint()
		if err != nil {
			return s, err
		}
		if n > len(p.b)/3 { // a field takes at least a name, a kind and a type
			return s, ErrTruncated
		}
		seen := map[string]bool{}
		for range n {
			name, err := p.str()
			if err != nil {
				return s, err
			}
			if seen[name] {
				return s, fmt.Errorf("%w: schema field %q twice", ErrCorrupt, name)
			}
			seen[name] = true
			fs, err := p.node(depth + 1)
			if err != nil {
				return s, err
			}
			s.Fields = append(s.Fields, Field{Name: name, Schema: fs})
		}
	case SchemaSlice, SchemaPointer:
		s.Elem, err = elem()
	case SchemaArray:
		if s.Len, err = p.uvarint(); err == nil {
			s.Elem, err = elem()
		}
	case SchemaMap:
		if s.Key, err = elem(); err == nil {
			s.Elem, err = elem()
		}
	case SchemaOpaque:
		s.Version, err = p.uvarint()
	}
	return s, err
}

// Compatibility is how values written under one schema can be read under
// another (Flink's TypeSerializerSchemaCompatibility).
type Compatibility uint8

const (
	// CompatibleAsIs: the bytes read the same under both schemas.
	CompatibleAsIs Compatibility = iota
	// CompatibleAfterMigration: the bytes must be rewritten (Transcoder):
	// fields were added (they get their zero value), removed (dropped) or
	// moved (matched by name).
	CompatibleAfterMigration
	// Incompatible: a field changed its type, or the change cannot be
	// migrated (see Compare).
	Incompatible
)

func (c Compatibility) String() string {
	switch c {
	case CompatibleAsIs:
		return "compatible as is"
	case CompatibleAfterMigration:
		return "compatible after migration"
	case Incompatible:
		return "incompatible"
	}
	return "compatibility(" + strconv.Itoa(int(c)) + ")"
}

// SchemaChangeError names the part of a schema that cannot be migrated.
type SchemaChangeError struct {
	Path   string // e.g. "Event.Items[].Price"; the root type's name for the value itself
	Old    string // the type written, e.g. "int64"
	New    string // the type declared now
	Reason string // what rule was broken
}

func (e *SchemaChangeError) Error() string {
	return fmt.Sprintf("%s changed from %s to %s: %s", e.Path, e.Old, e.New, e.Reason)
}

// Compare decides how values written under old can be read under new:
//
//   - struct fields are matched by name: a field only in new is added (it
//     reads as its zero value), a field only in old is removed (dropped), a
//     renamed field is both; moved fields are matched by name;
//   - a field (or element, or the value itself) whose kind changed is
//     Incompatible: int32 to int64, int to string, a struct to a slice...
//     Named types are matched by their kind: type Celsius float64 reads as
//     float64;
//   - arrays must keep their length; map keys may gain fields but not lose
//     them (two keys could become one);
//   - declared schemas (SchemaDeclarer) are compared whole: equal is
//     CompatibleAsIs, anything else Incompatible (the codec's Migrator may
//     still read them).
//
// Incompatible comes with a *SchemaChangeError naming the field.
func Compare(old, new Schema) (Compatibility, error) {
	if old.declared || new.declared {
		if bytes.Equal(old.AppendBinary(nil), new.AppendBinary(nil)) {
			return CompatibleAsIs, nil
		}
		return Incompatible, &SchemaChangeError{Path: new.name(), Old: old.String(), New: new.String(),
			Reason: "the codec declares its schema, so only the codec can migrate its values (codec.Migrator)"}
	}
	return compare(&old, &new, rootPath(&old, &new), false)
}

// rootPath names the value itself in errors: a struct by its type, so
// that its fields read "main.Event.Count"; anything else as "value".
func rootPath(old, new *Schema) string {
	if new.Kind == SchemaStruct && new.Type != "" {
		return new.Type
	}
	if old.Kind == SchemaStruct && old.Type != "" {
		return old.Type
	}
	return "value"
}

func compare(old, new *Schema, path string, inKey bool) (Compatibility, error) {
	if old.Kind != new.Kind {
		return Incompatible, &SchemaChangeError{Path: path, Old: old.name(), New: new.name(), Reason: "a field's type cannot change"}
	}
	switch old.Kind {
	case SchemaStruct:
		return compareStruct(old, new, path, inKey)
	case SchemaSlice, SchemaPointer:
		return compare(old.Elem, new.Elem, path+"[]", inKey)
	case SchemaArray:
		if old.Len != new.Len {
			return Incompatible, &SchemaChangeError{Path: path, Old: old.String(), New: new.String(), Reason: "an array's length cannot change"}
		}
		return compare(old.Elem, new.Elem, path+"[]", inKey)
	case SchemaMap:
		k, err := compare(old.Key, new.Key, path+"[key]", true)
		if err != nil {
			return k, err
		}
		v, err := compare(old.Elem, new.Elem, path+"[value]", inKey)
		return max(k, v), err
	case SchemaOpaque:
		if old.Type != new.Type || old.Version != new.Version {
			return Incompatible, &SchemaChangeError{Path: path, Old: old.name(), New: new.name(), Reason: "an opaque format can change only through the codec's migration"}
		}
	}
	return CompatibleAsIs, nil
}

func compareStruct(old, new *Schema, path string, inKey bool) (Compatibility, error) {
	result := CompatibleAsIs
	if len(old.Fields) != len(new.Fields) {
		result = CompatibleAfterMigration
	}
	for i := range old.Fields {
		of := &old.Fields[i]
		j := fieldIndex(new, of.Name)
		if j < 0 {
			if inKey {
				return Incompatible, &SchemaChangeError{Path: path + "." + of.Name, Old: of.Schema.name(), New: "(removed)",
					Reason: "a field of a map key cannot be removed: two keys could become one"}
			}
			result = CompatibleAfterMigration
			continue
		}
		if j != i {
			result = CompatibleAfterMigration
		}
		c, err := compare(&of.Schema, &new.Fields[j].Schema, path+"."+of.Name, inKey)
		if err != nil {
			return c, err
		}
		result = max(result, c)
	}
	return result, nil
}

func fieldIndex(s *Schema, name string) int {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return i
		}
	}
	return -1
}

// Transcoder returns a function that rewrites one value encoded under old
// (by a derived codec, see For) into its encoding under new, appending it
// to dst: added fields get their zero value's encoding, removed fields are
// skipped, fields are put in new's order. It is for schemas Compare finds
// compatible and not declared; build it once and call it per value.
func Transcoder(old, new Schema) (func(dst, src []byte) ([]byte, error), error) {
	if c, err := Compare(old, new); err != nil {
		return nil, err
	} else if c == CompatibleAsIs {
		return func(dst, src []byte) ([]byte, error) { return append(dst, src...), nil }, nil
	}
	if old.declared || new.declared {
		return nil, errors.New("codec: Weir cannot read declared schemas; the codec must migrate its values")
	}
	tc, err := transcoder(&old, &new)
	if err != nil {
		return nil, err
	}
	return func(dst, src []byte) ([]byte, error) {
		out, n, err := tc(dst, src)
		if err == nil && n != len(src) {
			err = fmt.Errorf("%w: %d bytes after the value", ErrCorrupt, len(src)-n)
		}
		return out, err
	}, nil
}

// tcFunc rewrites the value at the start of src and says how many bytes it read.
type tcFunc func(dst, src []byte) ([]byte, int, error)

// skipFunc says how many bytes the value at the start of src takes.
type skipFunc func(src []byte) (int, error)

func transcoder(old, new *Schema) (tcFunc, error) {
	if c, _ := compare(old, new, "", false); c == CompatibleAsIs {
		skip, err := skipper(old)
		if err != nil {
			return nil, err
		}
		return func(dst, src []byte) ([]byte, int, error) {
			n, err := skip(src)
			if err != nil {
				return dst, 0, err
			}
			return append(dst, src[:n]...), n, nil
		}, nil
	}
	switch old.Kind {
	case SchemaStruct:
		return structTranscoder(old, new)
	case SchemaSlice, SchemaMap:
		return containerTranscoder(old, new)
	case SchemaArray, SchemaPointer:
		elem, err := transcoder(old.Elem, new.Elem)
		if err != nil {
			return nil, err
		}
		if old.Kind == SchemaPointer {
			return func(dst, src []byte) ([]byte, int, error) {
				if len(src) < 1 {
					return dst, 0, ErrTruncated
				}
				if src[0] > 1 {
					return dst, 0, errPointerFlag
				}
				dst = append(dst, src[0])
				if src[0] == 0 {
					return dst, 1, nil
				}
				dst, n, err := elem(dst, src[1:])
				return dst, n + 1, err
			}, nil
		}
		length := old.Len
		return func(dst, src []byte) ([]byte, int, error) {
			n := 0
			for range length {
				var m int
				var err error
				if dst, m, err = elem(dst, src[n:]); err != nil {
					return dst, 0, err
				}
				n += m
			}
			return dst, n, nil
		}, nil
	}
	return nil, fmt.Errorf("codec: cannot migrate %s to %s", old.name(), new.name())
}

func structTranscoder(old, new *Schema) (tcFunc, error) {
	type oldField struct {
		to   int // index in new, or -1: removed
		tc   tcFunc
		skip skipFunc
	}
	olds := make([]oldField, len(old.Fields))
	from := make([]int, len(new.Fields)) // index in old, or -1: added
	zeros := make([][]byte, len(new.Fields))
	for j := range new.Fields {
		from[j] = fieldIndex(old, new.Fields[j].Name)
		if from[j] < 0 {
			z, err := zeroEncoding(nil, &new.Fields[j].Schema)
			if err != nil {
				return nil, err
			}
			zeros[j] = z
		}
	}
	for i := range old.Fields {
		f := &olds[i]
		f.to = fieldIndex(new, old.Fields[i].Name)
		var err error
		if f.to < 0 {
			f.skip, err = skipper(&old.Fields[i].Schema)
		} else {
			f.tc, err = transcoder(&old.Fields[i].Schema, &new.Fields[f.to].Schema)
		}
		if err != nil {
			return nil, err
		}
	}
	return func(dst, src []byte) ([]byte, int, error) {
		// The kept fields are rewritten into one scratch buffer first,
		// then appended in new's order.
		type span struct{ start, end int }
		spans := make([]span, len(new.Fields))
		var tmp []byte
		n := 0
		for i := range olds {
			f := &olds[i]
			var m int
			var err error
			if f.to < 0 {
				m, err = f.skip(src[n:])
			} else {
				start := len(tmp)
				tmp, m, err = f.tc(tmp, src[n:])
				spans[f.to] = span{start, len(tmp)}
			}
			if err != nil {
				return dst, 0, err
			}
			n += m
		}
		for j := range new.Fields {
			if from[j] < 0 {
				dst = append(dst, zeros[j]...)
			} else {
				dst = append(dst, tmp[spans[j].start:spans[j].end]...)
			}
		}
		return dst, n, nil
	}, nil
}

// containerTranscoder rewrites a slice (elements) or a map (keys, values).
func containerTranscoder(old, new *Schema) (tcFunc, error) {
	var key tcFunc
	if old.Kind == SchemaMap {
		var err error
		if key, err = transcoder(old.Key, new.Key); err != nil {
			return nil, err
		}
	}
	elem, err := transcoder(old.Elem, new.Elem)
	if err != nil {
		return nil, err
	}
	min := minSize(old.Elem)
	if key != nil {
		min += minSize(old.Key)
	}
	return func(dst, src []byte) ([]byte, int, error) {
		count, isNil, n, err := readNilLen(src)
		if err != nil {
			return dst, 0, err
		}
		dst = appendNilLen(dst, count, isNil)
		if err := checkCount(count, len(src)-n, min, 1); err != nil {
			return dst, 0, err
		}
		for range count {
			var m int
			if key != nil {
				if dst, m, err = key(dst, src[n:]); err != nil {
					return dst, 0, err
				}
				n += m
			}
			if dst, m, err = elem(dst, src[n:]); err != nil {
				return dst, 0, err
			}
			n += m
		}
		return dst, n, nil
	}, nil
}

// fixedWidth is the encoded size of fixed-width kinds, 0 for the others.
func fixedWidth(k SchemaKind) int {
	switch k {
	case SchemaBool, SchemaInt8, SchemaUint8:
		return 1
	case SchemaInt16, SchemaUint16:
		return 2
	case SchemaInt32, SchemaUint32, SchemaFloat32:
		return 4
	case SchemaInt64, SchemaUint64, SchemaInt, SchemaUint, SchemaFloat64:
		return 8
	case SchemaTime:
		return timeSize
	}
	return 0
}

// minSize is the fewest bytes a value of s encodes to. Only schemas made
// of nothing (structs without fields, arrays of them) have 0, and their
// values are always empty.
func minSize(s *Schema) int {
	if w := fixedWidth(s.Kind); w > 0 {
		return w
	}
	switch s.Kind {
	case SchemaStruct:
		n := 0
		for i := range s.Fields {
			n += minSize(&s.Fields[i].Schema)
		}
		return n
	case SchemaArray:
		return s.Len * minSize(s.Elem)
	}
	return 1
}

func skipper(s *Schema) (skipFunc, error) {
	if w := fixedWidth(s.Kind); w > 0 {
		return func(src []byte) (int, error) {
			if len(src) < w {
				return 0, ErrTruncated
			}
			return w, nil
		}, nil
	}
	switch s.Kind {
	case SchemaString, SchemaBytes:
		isString := s.Kind == SchemaString
		return func(src []byte) (int, error) {
			var length, n int
			var err error
			if isString {
				var v uint64
				if v, n, err = readUvarint(src); err == nil && v > MaxLen {
					err = errTooLong
				}
				length = int(min(v, MaxLen))
			} else {
				length, _, n, err = readNilLen(src)
			}
			if err != nil {
				return 0, err
			}
			if length > len(src)-n {
				return 0, ErrTruncated
			}
			return n + length, nil
		}, nil
	case SchemaStruct, SchemaArray:
		var parts []skipFunc
		count := 1
		if s.Kind == SchemaArray {
			e, err := skipper(s.Elem)
			if err != nil {
				return nil, err
			}
			parts, count = []skipFunc{e}, s.Len
		}
		for i := range s.Fields {
			f, err := skipper(&s.Fields[i].Schema)
			if err != nil {
				return nil, err
			}
			parts = append(parts, f)
		}
		if minSize(s) == 0 {
			return func([]byte) (int, error) { return 0, nil }, nil
		}
		return func(src []byte) (int, error) {
			n := 0
			for range count {
				for _, p := range parts {
					m, err := p(src[n:])
					if err != nil {
						return 0, err
					}
					n += m
				}
			}
			return n, nil
		}, nil
	case SchemaPointer:
		elem, err := skipper(s.Elem)
		if err != nil {
			return nil, err
		}
		return func(src []byte) (int, error) {
			if len(src) < 1 {
				return 0, ErrTruncated
			}
			switch src[0] {
			case 0:
				return 1, nil
			case 1:
				n, err := elem(src[1:])
				return n + 1, err
			}
			return 0, errPointerFlag
		}, nil
	case SchemaSlice, SchemaMap:
		tc, err := containerTranscoder(s, s)
		if err != nil {
			return nil, err
		}
		return func(src []byte) (int, error) {
			_, n, err := tc(nil, src)
			return n, err
		}, nil
	}
	return nil, fmt.Errorf("codec: cannot read values of %s", s.name())
}

// zeroEncoding appends the encoding of the zero value of s.
func zeroEncoding(dst []byte, s *Schema) ([]byte, error) {
	if s.Kind == SchemaTime {
		return appendTime(dst, time.Time{}), nil
	}
	if w := fixedWidth(s.Kind); w > 0 {
		return append(dst, make([]byte, w)...), nil
	}
	switch s.Kind {
	case SchemaString, SchemaBytes, SchemaSlice, SchemaMap, SchemaPointer:
		return append(dst, 0), nil // empty string; nil slice, map, pointer
	case SchemaStruct:
		var err error
		for i := range s.Fields {
			if dst, err = zeroEncoding(dst, &s.Fields[i].Schema); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case SchemaArray:
		var err error
		for range s.Len {
			if dst, err = zeroEncoding(dst, s.Elem); err != nil {
				return dst, err
			}
		}
		return dst, nil
	}
	return dst, fmt.Errorf("codec: no zero value for %s", s.name())
}
