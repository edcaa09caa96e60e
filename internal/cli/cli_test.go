package cli

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(args ...string) (code int, out, errOut string) {
	var o, e bytes.Buffer
	code = Main(args, &o, &e)
	return code, o.String(), e.String()
}

func TestVersionAndUsage(t *testing.T) {
	if code, out, _ := runCLI("version"); code != 0 || !strings.HasPrefix(out, "weir ") {
		t.Fatalf("version: %d %q", code, out)
	}
	if code, _, errOut := runCLI(); code != 2 || !strings.Contains(errOut, "Usage:") {
		t.Fatalf("no args: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI("frobnicate"); code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Fatalf("unknown command: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI("run", "nosuchjob", "--rest-address", ""); code != 2 || !strings.Contains(errOut, `unknown job "nosuchjob"`) {
		t.Fatalf("unknown job: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI("run", "wordcount", "--parallelism", "x"); code != 2 || !strings.Contains(errOut, "parallelism") {
		t.Fatalf("bad flag: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI("cancel", "not-an-id"); code != 2 || !strings.Contains(errOut, "32 lowercase hex") {
		t.Fatalf("bad id: %d %q", code, errOut)
	}
}

func TestRunWordcountFiles(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	os.WriteFile(in, []byte("b a b\nC c, c!\n"), 0o644)
	code, _, errOut := runCLI("run", "wordcount", "--input", in, "--output", out, "--parallelism", "2", "--rest-address", "")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errOut)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	got := map[string]bool{}
	for _, l := range lines {
		got[l] = true
	}
	if len(lines) != 3 || !got["a\t1"] || !got["b\t2"] || !got["c\t3"] {
		t.Fatalf("output %q", data)
	}
}

func TestRunReportsMissingInput(t *testing.T) {
	code, _, errOut := runCLI("run", "wordcount", "--input", "/nonexistent/in.txt", "--output", filepath.Join(t.TempDir(), "o"), "--rest-address", "")
	if code != 1 || !strings.Contains(errOut, "/nonexistent/in.txt") {
		t.Fatalf("code %d: %q", code, errOut)
	}
}

func TestRESTAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, errOut := runCLI("run", "wordcount", "--rest-address", ln.Addr().String())
	if code != 1 || !strings.Contains(errOut, ln.Addr().String()) {
		t.Fatalf("code %d: %q", code, errOut)
	}
}

func TestListWithoutCluster(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	if code, _, errOut := runCLI("list", "--address", addr); code != 1 || !strings.Contains(errOut, "no Weir cluster answered") {
		t.Fatalf("code %d: %q", code, errOut)
	}
}

func TestBench(t *testing.T) {
	for _, args := range [][]string{{"bench", "chained", "--events", "100000"}, {"bench", "shuffle", "--events", "100000"}} {
		code, out, errOut := runCLI(args...)
		if code != 0 || !strings.Contains(out, "million events/s per core") {
			t.Fatalf("%v: code %d, out %q, err %q", args, code, out, errOut)
		}
	}
	if code, _, errOut := runCLI("bench", "nope"); code != 2 || !strings.Contains(errOut, "unknown benchmark") {
		t.Fatalf("code %d: %q", code, errOut)
	}
}
