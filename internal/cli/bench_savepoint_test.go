package cli

import (
	"regexp"
	"strings"
	"testing"
)

// weir bench savepoint validates every flag with a usage error naming it.
func TestBenchSavepointFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--state", "lots"}, `--state "lots"`},
		{[]string{"--state", "100kb"}, "--state must be between 1mb and 64gb"},
		{[]string{"--state", "65gb"}, "--state must be between 1mb and 64gb"},
		{[]string{"--value-bytes", "4"}, "--value-bytes must be between 8 and"},
		{[]string{"--backend", "rocksdb"}, `--backend must be hashmap or pebble, got "rocksdb"`},
		{[]string{"--format", "binary"}, `--format must be canonical or native, got "binary"`},
		{[]string{"--parallelism", "0"}, "--parallelism of a benchmark must be between 1 and 1024"},
		{[]string{"--restore-parallelism", "1,x"}, "--restore-parallelism must be a comma-separated list"},
		{[]string{"--restore-parallelism", "0"}, "--restore-parallelism must be a comma-separated list"},
		{[]string{"--restore-parallelism", "1,2,3,4,5,6,7,8,9"}, "--restore-parallelism lists at most 8"},
		{[]string{"--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"extra"}, "bench savepoint takes no arguments"},
	} {
		args := append([]string{"bench", "savepoint"}, tc.args...)
		code, out, errOut := runCLI(args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, out, errOut, tc.want)
		}
	}
}

// A tiny run of each backend and format: the savepoint is taken, restored
// at another parallelism and every key verified.
func TestBenchSavepointTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("runs jobs")
	}
	for _, tc := range []struct{ backend, format, kind string }{
		{"hashmap", "canonical", "canonical"},
		{"hashmap", "native", "canonical"}, // the heap backend's native format is the canonical one
		{"pebble", "canonical", "canonical"},
		{"pebble", "native", "native"},
	} {
		code, out, errOut := runCLI("bench", "savepoint", "--state", "2mb", "--value-bytes", "100", "--backend", tc.backend,
			"--format", tc.format, "--parallelism", "2", "--restore-parallelism", "2,3", "--dir", t.TempDir())
		if code != 0 {
			t.Fatalf("%s/%s: exit %d: %s\n%s", tc.backend, tc.format, code, errOut, out)
		}
		if !regexp.MustCompile(`savepoint: 19418 keys, 2\.1 MB logical state, [0-9.]+ MB in \d+ files \(` + tc.kind + `\)`).MatchString(out) {
			t.Errorf("%s/%s: no savepoint line with %s keyed state:\n%s", tc.backend, tc.format, tc.kind, out)
		}
		for _, p := range []string{"2", "3"} {
			if !strings.Contains(out, "restore at p="+p+": running after") || !strings.Contains(out, "19418 of 19418 keys verified") {
				t.Errorf("%s/%s: no verified restore at p=%s:\n%s", tc.backend, tc.format, p, out)
			}
		}
	}
}
