package kafkakeyedcount_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirhq/weir/connector/kafka"
	"github.com/weirhq/weir/jobs/kafkakeyedcount"
	"github.com/weirhq/weir/jobs/keyedcount"
)

// Records in: the value is key<TAB>value; anything else is a bad record
// whose error says what is wrong. Records out: key<TAB>n<TAB>sum keyed by
// the key.
func TestDeserializeSerialize(t *testing.T) {
	r, err := kafkakeyedcount.Deserialize(&kafka.Record{Topic: "in", Value: []byte("k1\t -42 ")})
	if err != nil || r != (keyedcount.Record{Key: "k1", Value: -42}) {
		t.Errorf("Deserialize(k1<TAB> -42 ) = %+v, %v", r, err)
	}
	for value, want := range map[string]string{
		"no tab":                  "want key<TAB>value",
		"\t5":                     "the key is empty",
		"k\tfive":                 "is not an integer",
		"k\t1e3":                  "is not an integer",
		"k\t99999999999999999999": "is not an integer",
	} {
		if _, err := kafkakeyedcount.Deserialize(&kafka.Record{Value: []byte(value)}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Deserialize(%q): error %v, want one saying %q", value, err, want)
		}
	}
	k, v, err := kafkakeyedcount.Serialize(keyedcount.Count{Key: "k1", N: 3, Sum: -7})
	if err != nil || string(k) != "k1" || string(v) != "k1\t3\t-7" {
		t.Errorf("Serialize = %q, %q, %v; want k1, k1<TAB>3<TAB>-7", k, v, err)
	}
}

// The acceptance tests' checker catches each way the output can be wrong,
// naming the first differing key.
func TestCompareCatchesEveryDifference(t *testing.T) {
	model := map[string][]int64{"a": {5, -2, 7}, "b": {1}}
	rec := func(v string) *kgo.Record {
		k, _, _ := strings.Cut(v, "\t")
		return &kgo.Record{Key: []byte(k), Value: []byte(v)}
	}
	good := []string{"a\t1\t5", "b\t1\t1", "a\t2\t3", "a\t3\t10"}
	recs := func(extra ...string) []*kgo.Record {
		var out []*kgo.Record
		for _, v := range append(slices.Clone(good), extra...) {
			out = append(out, rec(v))
		}
		return out
	}
	if d, err := compare(recs(), model, true); err != nil || d != 0 {
		t.Fatalf("the right output: %d duplicates, %v", d, err)
	}
	if d, err := compare(recs("a\t2\t3"), model, false); err != nil || d != 1 {
		t.Errorf("at least once with a duplicate: %d duplicates, %v; want 1, nil", d, err)
	}
	for _, tc := range []struct {
		name string
		recs []*kgo.Record
		want string
	}{
		{"duplicate", recs("a\t2\t3"), `key "a" (expected n=1..3, final sum 10; read 3 distinct n): n=2 (sum 3) read 2 times`},
		{"missing", recs()[:3], `key "a" (expected n=1..3, final sum 10; read 2 distinct n): n=3 missing (expected sum 10)`},
		{"wrong sum", append(recs()[:3], rec("a\t3\t11")), `n=3: expected sum 10, got sums [11]`},
		{"beyond", recs("b\t2\t1"), `key "b" (expected n=1..1, final sum 1; read 2 distinct n): n=2 (sums [1]) beyond the 1 values written`},
		{"unknown key", recs("c\t1\t1"), `key "c" (expected n=1..0, final sum 0; read 1 distinct n): n=1 (sums [1]) beyond the 0 values written`},
		{"not three fields", recs("a\t1"), `is not key<TAB>n<TAB>sum`},
		{"wrong Kafka key", append(recs(), &kgo.Record{Key: []byte("x"), Value: []byte("a\t9\t9")}), `Kafka key "x", want the counted key "a"`},
	} {
		if _, err := compare(tc.recs, model, true); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
