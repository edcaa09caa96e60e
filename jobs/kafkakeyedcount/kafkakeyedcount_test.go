package kafkakeyedcount_test

import (
	"strings"
	"testing"

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
