package keygroup

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// testdata/flink_golden.txt holds values computed by Apache Flink itself, not by
// this package. It was produced by a throwaway Java program (kept out of this
// repository) compiled against the released jars org.apache.flink:flink-core
// and org.apache.flink:flink-runtime 1.20.5, fetched with
// `mvn dependency:copy`. The program called, for each row:
//
//	murmur     MathUtils.murmurHash, KeyGroupRangeAssignment.computeKeyGroupForKeyHash
//	long       Long.hashCode, KeyGroupRangeAssignment.assignToKeyGroup,
//	           KeyGroupRangeAssignment.assignKeyToParallelOperator
//	range      KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex
//	opindex    KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup
//	defaultmax KeyGroupRangeAssignment.computeDefaultMaxParallelism
//	intersect  KeyGroupRange.getIntersection, getNumberOfKeyGroups
//
// Inputs are edge values plus values drawn from java.util.Random with a fixed
// seed; the murmur rows include both 32-bit inputs whose murmur hash is 0 (found
// by brute force over all 2^32 ints), one of which hits the Integer.MIN_VALUE
// branch. The same program run against Flink 2.2.0 printed identical rows.
// Regenerate the same way if the table's coverage needs to change; never
// edit the expected values by hand.

type goldenRow struct {
	line   int
	kind   string
	fields []int64
}

func readGolden(t *testing.T) []goldenRow {
	t.Helper()
	f, err := os.Open("testdata/flink_golden.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]int{"murmur": 4, "long": 5, "range": 6, "opindex": 4, "defaultmax": 2, "intersect": 7}
	var rows []goldenRow
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Fields(line)
		arity, ok := want[parts[0]]
		if !ok {
			t.Fatalf("line %d: unknown row kind %q", n, parts[0])
		}
		if len(parts)-1 != arity {
			t.Fatalf("line %d: %s row has %d fields, want %d", n, parts[0], len(parts)-1, arity)
		}
		r := goldenRow{line: n, kind: parts[0]}
		for _, p := range parts[1:] {
			v, err := strconv.ParseInt(p, 10, 64)
			if err != nil {
				t.Fatalf("line %d: %v", n, err)
			}
			r.fields = append(r.fields, v)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestFlinkGolden(t *testing.T) {
	rows := readGolden(t)
	counts := map[string]int{}
	for _, r := range rows {
		counts[r.kind]++
		f := r.fields
		switch r.kind {
		case "murmur":
			h := uint32(int32(f[0]))
			if got := Murmur(h); int64(got) != f[1] {
				t.Errorf("line %d: Murmur(%d) = %d, Flink says %d", r.line, f[0], got, f[1])
			}
			if got := ForHash(h, 128); int64(got) != f[2] {
				t.Errorf("line %d: ForHash(%d, 128) = %d, Flink says %d", r.line, f[0], got, f[2])
			}
			if got := ForHash(h, 4096); int64(got) != f[3] {
				t.Errorf("line %d: ForHash(%d, 4096) = %d, Flink says %d", r.line, f[0], got, f[3])
			}
		case "long":
			h := HashInt64(f[0])
			if int64(int32(h)) != f[1] {
				t.Errorf("line %d: HashInt64(%d) = %d, Long.hashCode says %d", r.line, f[0], int32(h), f[1])
			}
			if got := ForHash(h, 128); int64(got) != f[2] {
				t.Errorf("line %d: key group of long %d (maxP 128) = %d, Flink says %d", r.line, f[0], got, f[2])
			}
			kg := ForHash(h, 4096)
			if int64(kg) != f[3] {
				t.Errorf("line %d: key group of long %d (maxP 4096) = %d, Flink says %d", r.line, f[0], kg, f[3])
			}
			if got := OperatorIndex(kg, 7, 4096); int64(got) != f[4] {
				t.Errorf("line %d: subtask of long %d (p 7, maxP 4096) = %d, Flink says %d", r.line, f[0], got, f[4])
			}
		case "range":
			p, maxP, idx := int(f[0]), int(f[1]), int(f[2])
			got := RangeFor(idx, p, maxP)
			if int64(got.Start) != f[3] || int64(got.End) != f[4] || int64(got.Len()) != f[5] {
				t.Errorf("line %d: RangeFor(%d, %d, %d) = %v len %d, Flink says [%d, %d] len %d",
					r.line, idx, p, maxP, got, got.Len(), f[3], f[4], f[5])
			}
		case "opindex":
			p, maxP, kg := int(f[0]), int(f[1]), int(f[2])
			if got := OperatorIndex(kg, p, maxP); int64(got) != f[3] {
				t.Errorf("line %d: OperatorIndex(%d, %d, %d) = %d, Flink says %d", r.line, kg, p, maxP, got, f[3])
			}
		case "defaultmax":
			if got := DefaultMaxParallelismFor(int(f[0])); int64(got) != f[1] {
				t.Errorf("line %d: DefaultMaxParallelismFor(%d) = %d, Flink says %d", r.line, f[0], got, f[1])
			}
		case "intersect":
			a := Range{Start: int(f[0]), End: int(f[1])}
			b := Range{Start: int(f[2]), End: int(f[3])}
			got := a.Intersect(b)
			if int64(got.Len()) != f[4] {
				t.Errorf("line %d: %v.Intersect(%v).Len() = %d, Flink says %d", r.line, a, b, got.Len(), f[4])
			} else if f[4] > 0 && (int64(got.Start) != f[5] || int64(got.End) != f[6]) {
				t.Errorf("line %d: %v.Intersect(%v) = %v, Flink says [%d, %d]", r.line, a, b, got, f[5], f[6])
			}
		}
	}
	// Guard against a truncated or emptied table silently passing.
	for kind, min := range map[string]int{"murmur": 400, "long": 150, "range": 500, "opindex": 500, "defaultmax": 150, "intersect": 50} {
		if counts[kind] < min {
			t.Errorf("golden table has %d %q rows, want at least %d", counts[kind], kind, min)
		}
	}
}
