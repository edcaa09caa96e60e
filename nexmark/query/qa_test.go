package query

// Unit tests of group qa's helpers on inputs the generator never makes.

import (
	"testing"
	"time"
)

// q22Split on URLs the generator never makes: short, empty pieces, slashes
// at the ends.
func TestQ22Split(t *testing.T) {
	for _, c := range []struct {
		url  string
		want []string
	}{
		{"", nil},
		{"a/b/c", nil},
		{"a/b/c/", []string{""}},
		{"a/b/c/d", []string{"d"}},
		{"a/b/c/d/e", []string{"d", "e"}},
		{"a//c/d/e/f/g", []string{"d", "e", "f"}},
		{"///", []string{""}},
		{"/////", []string{"", "", ""}},
		{"https://www.nexmark.com/abc/de_f/ghi/item.htm?query=1", []string{"abc", "de_f", "ghi"}},
	} {
		var dirs [3]string
		n := q22Split(c.url, &dirs)
		if n != len(c.want) {
			t.Errorf("%q: %d pieces %q, want %q", c.url, n, dirs[:n], c.want)
			continue
		}
		for i := range n {
			if dirs[i] != c.want[i] {
				t.Errorf("%q: %q, want %q", c.url, dirs[:n], c.want)
			}
		}
	}
}

func TestQ21Extract(t *testing.T) {
	for _, c := range []struct {
		url, want string
		ok        bool
	}{
		{"", "", false},
		{"channel_id=7", "7", true},
		{"channel_id=7&channel_id=8", "7", true},
		{"x?channel_id=7", "", false},
		{"x?a=1&channel_id=", "", true},
		{"x?a=1&channel_id=42&b=2", "42", true},
		{"x?a=1&xchannel_id=5&channel_id=6", "6", true},
		{"&channel_id=9", "9", true},
	} {
		if got, ok := q21Extract(c.url); got != c.want || ok != c.ok {
			t.Errorf("%q: %q, %v; want %q, %v", c.url, got, ok, c.want, c.ok)
		}
	}
}

func TestQ21HotID(t *testing.T) {
	for _, c := range []struct {
		channel, want string
		ok            bool
	}{
		{"Apple", "0", true}, {"GOOGLE", "1", true}, {"facebook", "2", true}, {"BaiDu", "3", true},
		{"faceboo\u212a", "2", true}, // the Kelvin sign lower-cases to k in Java too
		{"ba\u0130du", "", false},    // Java lower-cases U+0130 to "i\u0307"
		{"", "", false}, {"channel-7", "", false}, {"apples", "", false}, {"appl", "", false},
		{"\u00e4pple", "", false},
	} {
		if got, ok := q21HotID(c.channel); got != c.want || ok != c.ok {
			t.Errorf("%q: %q, %v; want %q, %v", c.channel, got, ok, c.want, c.ok)
		}
	}
}

func TestQ14Bounds(t *testing.T) {
	if !(908*(q14MinPrice-1) <= 1_000_000_000 && 908*q14MinPrice > 1_000_000_000) {
		t.Errorf("q14MinPrice %d", int64(q14MinPrice))
	}
	if !(908*q14MaxPrice < 50_000_000_000 && 908*(q14MaxPrice+1) >= 50_000_000_000) {
		t.Errorf("q14MaxPrice %d", int64(q14MaxPrice))
	}
	// Before 1970 the hour still counts from midnight UTC.
	for ms, want := range map[int64]string{-1: "nightTime", -5 * 3_600_000: "otherTime", -5*3_600_000 - 1: "dayTime", -6 * 3_600_000: "dayTime", 7 * 3_600_000: "otherTime"} {
		if got := q14TimeType(ms); got != want {
			t.Errorf("q14TimeType(%d) = %s, want %s", ms, got, want)
		}
	}
}

// qaAppendDate and qaAppendMinute against package time, from year 1 to
// 9999 (every day from 1890 to 2110, every 97th day elsewhere).
func TestQADate(t *testing.T) {
	lo := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	hi := time.Date(9999, 12, 31, 23, 59, 0, 0, time.UTC).UnixMilli()
	dense0 := time.Date(1890, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	dense1 := time.Date(2110, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	const day = 86_400_000
	var b []byte
	for ms := lo; ms <= hi; {
		tm := time.UnixMilli(ms).UTC()
		d, m := qaDayMinute(ms)
		b = qaAppendDate(b[:0], d)
		b = append(b, ' ')
		b = qaAppendMinute(b, m)
		if got, want := string(b), tm.Format("2006-01-02 15:04"); got != want {
			t.Fatalf("%d: %s, want %s", ms, got, want)
		}
		if ms >= dense0 && ms < dense1 {
			ms += day + 7*60_001
		} else {
			ms += 97*day + 13*60_001
		}
	}
}
