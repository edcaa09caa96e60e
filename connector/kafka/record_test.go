package kafka

import (
	"strings"
	"testing"
)

// ValueExcerpt quotes a value whole up to 64 bytes, and cuts a longer one
// after 64 bytes, marked with "...".
func TestValueExcerpt(t *testing.T) {
	long := strings.Repeat("ab", 40)
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"k\tx", `"k\tx"`},
		{long[:64], `"` + long[:64] + `"`},
		{long[:65], `"` + long[:64] + `"...`},
		{long, `"` + long[:64] + `"...`},
	} {
		if got := ValueExcerpt([]byte(tc.in)); got != tc.want {
			t.Errorf("ValueExcerpt(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
