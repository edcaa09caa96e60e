package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirhq/weir/nexmark"
)

// TestNexmarkGenerate writes events to a file and to standard output and
// checks them against the generator, line by line.
func TestNexmarkGenerate(t *testing.T) {
	out := filepath.Join(t.TempDir(), "events.jsonl")
	code, stdout, errOut := runCLI("nexmark", "generate", "--events", "1234", "--tps", "1000", "--seed", "5", "--output", out)
	if code != 0 || !strings.Contains(stdout, "wrote 1234 events") {
		t.Fatalf("code %d: %q %q", code, stdout, errOut)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	cfg := nexmark.DefaultConfig()
	cfg.EventsPerSecond, cfg.Seed = 1000, 5
	g, err := nexmark.NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	var e nexmark.Event
	for n := range int64(1234) {
		g.Event(n, &e)
		want = nexmark.AppendJSON(want, &e)
	}
	if string(data) != string(want) {
		t.Fatalf("the file differs from the generator's events (%d vs %d bytes)", len(data), len(want))
	}
	code, stdout, errOut = runCLI("nexmark", "generate", "--events", "1234", "--tps", "1000", "--seed", "5", "--output", "-")
	if code != 0 || stdout != string(want) {
		t.Fatalf("--output -: code %d, %d bytes, %q", code, len(stdout), errOut)
	}
	// The decoder reads what generate writes.
	d := nexmark.NewDecoder(strings.NewReader(stdout))
	for n := 0; ; n++ {
		if err := d.Next(&e); err != nil {
			if n != 1234 || err.Error() != "EOF" {
				t.Fatalf("read %d events, then %v", n, err)
			}
			break
		}
	}
}

func TestNexmarkGenerateErrors(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "e.jsonl")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"nexmark"}, 2, "nexmark needs a command: generate"},
		{[]string{"nexmark", "frob"}, 2, `unknown nexmark command "frob"`},
		{[]string{"nexmark", "generate", "--output", out}, 2, "--events must be a positive number of events, got 0"},
		{[]string{"nexmark", "generate", "--events", "-3", "--output", out}, 2, "--events must be a positive number"},
		{[]string{"nexmark", "generate", "--events", "x", "--output", out}, 2, `--events "x": not a valid value`},
		{[]string{"nexmark", "generate", "--events", "10", "--tps", "0", "--output", out}, 2, "--tps must be a positive number of events per second"},
		{[]string{"nexmark", "generate", "--events", "10", "--seed", "-1", "--output", out}, 2, `--seed "-1": want a number from 0 to`},
		{[]string{"nexmark", "generate", "--events", "10"}, 2, "needs --output FILE"},
		{[]string{"nexmark", "generate", "--events", "10", "--output", out, "extra"}, 2, `takes no arguments, got ["extra"]`},
		{[]string{"nexmark", "generate", "--events", "10", "--rate", "5", "--output", out}, 2, "unknown flag --rate"},
		{[]string{"nexmark", "generate", "--events", "10", "--output", filepath.Join(dir, "no", "such", "dir", "f")}, 1, "no such file or directory"},
	} {
		code, _, errOut := runCLI(c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: code %d, %q; want code %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}
