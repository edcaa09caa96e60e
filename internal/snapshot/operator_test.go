package snapshot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func ops(spec string) OperatorSnapshot {
	// spec: "name:kind=a,b;name2:kind=" with kind l (list), u (union), b (broadcast)
	var s OperatorSnapshot
	if spec == "" {
		return s
	}
	for _, part := range strings.Split(spec, ";") {
		head, elems, _ := strings.Cut(part, "=")
		name, k, _ := strings.Cut(head, ":")
		st := OperatorState{Name: name, Kind: map[string]Kind{"l": KindOperatorList, "u": KindOperatorUnion, "b": KindBroadcast}[k]}
		if elems != "" {
			for _, e := range strings.Split(elems, ",") {
				st.Elements = append(st.Elements, []byte(e))
			}
		}
		s.States = append(s.States, st)
	}
	return s
}

func show(ss []OperatorSnapshot) string {
	var subs []string
	for _, s := range ss {
		var parts []string
		for _, st := range s.States {
			var es []string
			for _, e := range st.Elements {
				es = append(es, string(e))
			}
			parts = append(parts, fmt.Sprintf("%s=%s", st.Name, strings.Join(es, ",")))
		}
		subs = append(subs, strings.Join(parts, ";"))
	}
	return strings.Join(subs, " | ")
}

// TestRedistributeOperatorGolden pins the redistribution rules with
// explicit cases (old subtasks -> new subtasks).
func TestRedistributeOperatorGolden(t *testing.T) {
	cases := []struct {
		old    []string
		newPar int
		want   string
	}{
		{[]string{"offsets:l=p0,p1,p2", "offsets:l=p3,p4"}, 2, "offsets=p0,p1,p2 | offsets=p3,p4"},
		{[]string{"offsets:l=p0,p1,p2", "offsets:l=p3,p4"}, 3, "offsets=p0,p1 | offsets=p2,p3 | offsets=p4"},
		{[]string{"offsets:l=p0,p1,p2", "offsets:l=p3,p4"}, 1, "offsets=p0,p1,p2,p3,p4"},
		{[]string{"offsets:l=p0", "offsets:l="}, 4, "offsets=p0 | offsets= | offsets= | offsets="},
		{[]string{"txn:u=a", "txn:u=b,c"}, 3, "txn=a,b,c | txn=a,b,c | txn=a,b,c"},
		{[]string{"rules:b=r1,r2", "rules:b=r1,r2"}, 3, "rules=r1,r2 | rules=r1,r2 | rules=r1,r2"},
		{[]string{"z:l=1,2,3,4;a:u=x", "z:l=5"}, 2, "a=x;z=1,2,3 | a=x;z=4,5"},
		{[]string{"", "only:l=q"}, 2, "only=q | only="},
	}
	for _, c := range cases {
		var old []OperatorSnapshot
		for _, o := range c.old {
			old = append(old, ops(o))
		}
		got, err := RedistributeOperator(old, c.newPar)
		if err != nil {
			t.Fatal(err)
		}
		if show(got) != c.want {
			t.Errorf("%q -> %d:\n got %s\nwant %s", c.old, c.newPar, show(got), c.want)
		}
	}
	if _, err := RedistributeOperator([]OperatorSnapshot{ops("x:l=1"), ops("x:u=2")}, 2); err == nil {
		t.Error("kind conflict not reported")
	}
}

func TestOperatorEncoding(t *testing.T) {
	s := ops("offsets:l=p0,,p2;rules:b=k")
	b := EncodeOperator(s)
	got, err := DecodeOperator(b)
	if err != nil || show([]OperatorSnapshot{got}) != show([]OperatorSnapshot{s}) {
		t.Fatalf("round trip: %v %s", err, show([]OperatorSnapshot{got}))
	}
	b[20] ^= 1
	var ce *CorruptError
	if _, err := DecodeOperator(b); !errors.As(err, &ce) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("corrupt: %v", err)
	}
}

// TestOperatorGoldenV1StillDecodes reads testdata/operator-v1.bin, written by
// format version 1 (go test -run OperatorGolden -update rewrites it).
// Version 1 is frozen: -update no longer rewrites it.
func TestOperatorGoldenV1StillDecodes(t *testing.T) {
	path := filepath.Join("testdata", "operator-v1.bin")
	want := ops("offsets:l=p0,,p2;rules:b=k;txns:u=t1")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeOperator(b)
	if err != nil {
		t.Fatal(err)
	}
	if show([]OperatorSnapshot{got}) != show([]OperatorSnapshot{want}) || got.States[2].Kind != KindOperatorUnion {
		t.Fatalf("golden decodes to %s", show([]OperatorSnapshot{got}))
	}
}

// TestOperatorGoldenV2StillDecodes reads testdata/operator-v2.bin (format
// version 2: codec identities; go test -run OperatorGoldenV2 -update
// rewrites it).
func TestOperatorGoldenV2StillDecodes(t *testing.T) {
	path := filepath.Join("testdata", "operator-v2.bin")
	want := ops("offsets:l=p0,,p2;rules:b=k;txns:u=t1")
	want.States[0].Codec, want.States[1].Codec = "int64", "string -> string"
	if *update && operatorVersion == 2 {
		if err := os.WriteFile(path, EncodeOperator(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeOperator(b)
	if err != nil {
		t.Fatal(err)
	}
	if show([]OperatorSnapshot{got}) != show([]OperatorSnapshot{want}) || got.States[0].Codec != "int64" ||
		got.States[1].Codec != "string -> string" || got.States[2].Codec != "" {
		t.Fatalf("golden v2 decodes to %+v", got)
	}
	// Redistribution keeps the codecs.
	re, err := RedistributeOperator([]OperatorSnapshot{got}, 2)
	if err != nil || re[1].States[0].Codec != "int64" || re[1].States[1].Codec != "string -> string" {
		t.Fatalf("redistributed: %+v %v", re, err)
	}
}

func FuzzDecodeOperator(f *testing.F) {
	f.Add(EncodeOperator(ops("offsets:l=p0,,p2;rules:b=k")))
	if b, err := os.ReadFile(filepath.Join("testdata", "operator-v1.bin")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := DecodeOperator(b); err == nil {
			if _, err := DecodeOperator(EncodeOperator(s)); err != nil {
				t.Fatalf("re-encoding a decoded snapshot fails: %v", err)
			}
		}
	})
}

// Format version 3 keeps each state's schemas, through redistribution too.
func TestOperatorSchemasRoundTrip(t *testing.T) {
	in := ops("offsets:l=p0,,p2;rules:b=k")
	in.States[0].Schema = "\x01\x00\x05"
	in.States[1].Schema, in.States[1].KeySchema = "\x01\x00\x0e", "\x01\x00\x0f"
	got, err := DecodeOperator(EncodeOperator(in))
	if err != nil || show([]OperatorSnapshot{got}) != show([]OperatorSnapshot{in}) ||
		got.States[0].Schema != in.States[0].Schema || got.States[1].Schema != in.States[1].Schema ||
		got.States[1].KeySchema != in.States[1].KeySchema {
		t.Fatalf("decoded %q, %v", got, err)
	}
	re, err := RedistributeOperator([]OperatorSnapshot{got, got}, 3)
	if err != nil || re[2].States[0].Schema != in.States[0].Schema || re[2].States[1].KeySchema != in.States[1].KeySchema {
		t.Fatalf("redistributed %q, %v", re, err)
	}
}
