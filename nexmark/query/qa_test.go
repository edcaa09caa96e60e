package query

// Unit tests of group qa's helpers on inputs the generator never makes.

import "testing"

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
