package graph

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of the testdata files")

// testCase is one block of a data-driven test file:
//
//	command arg=value ...
//	input lines
//	----
//	expected output (ends at a blank line)
type testCase struct {
	pos      string // file:line of the command
	cmd      string
	args     map[string]string
	input    []string
	expected string
	// start and end of the expected lines in the file, for -rewrite.
	expStart, expEnd int
}

// runDataDriven runs every case of file through f, which returns the actual
// output. With -rewrite it writes the actual outputs back into the file.
func runDataDriven(t *testing.T, file string, f func(t *testing.T, tc *testCase) string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var out []string
	i := 0
	for i < len(lines) {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			out = append(out, l)
			i++
			continue
		}
		tc := &testCase{pos: fmt.Sprintf("%s:%d", filepath.Base(file), i+1), args: map[string]string{}}
		fields := strings.Fields(l)
		tc.cmd = fields[0]
		for _, a := range fields[1:] {
			k, v, _ := strings.Cut(a, "=")
			tc.args[k] = v
		}
		out = append(out, l)
		i++
		for i < len(lines) && lines[i] != "----" {
			tc.input = append(tc.input, lines[i])
			out = append(out, lines[i])
			i++
		}
		if i == len(lines) {
			t.Fatalf("%s: no ---- separator", tc.pos)
		}
		out = append(out, "----")
		i++
		tc.expStart = i
		var exp []string
		for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
			exp = append(exp, lines[i])
			i++
		}
		tc.expected = strings.Join(exp, "\n")
		var actual string
		t.Run(tc.pos, func(t *testing.T) {
			actual = strings.TrimRight(f(t, tc), "\n")
			if !*rewrite && actual != tc.expected {
				t.Errorf("%s: %s\n--- got:\n%s\n--- want:\n%s", tc.pos, l, actual, tc.expected)
			}
		})
		out = append(out, actual)
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// intArg returns the integer argument k, or def.
func (tc *testCase) intArg(t *testing.T, k string, def int) int {
	v, ok := tc.args[k]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s: %s=%q: %v", tc.pos, k, v, err)
	}
	return n
}
