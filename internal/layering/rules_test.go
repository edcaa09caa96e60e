package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestCheck runs the checker on small graphs whose violations are known.
func TestCheck(t *testing.T) {
	g := Graph{
		Imports: map[string][]string{
			"m/proto":             {"fmt", "m/rest"},
			"m/rest":              {"net/http"},
			"m/jm":                {"m/proto", "m/coord"},
			"m/coord":             {"m/op"},
			"m/op":                {"m/heap"},
			"m/heap":              {"fmt"},
			"m/conn":              {"m/internal/crash", "m/conn/internal/drv"},
			"m/conn/x":            {"m/conn/internal/drv"},
			"m/pure":              {"sort"},
			"fmt":                 {"os"},
			"os":                  nil,
			"sort":                nil,
			"net/http":            {"fmt"},
			"m/leaf":              {"fmt"},
			"m/conn/internal/drv": nil,
			"m/internal/crash":    nil,
		},
		Std: map[string]bool{"fmt": true, "os": true, "sort": true, "net/http": true},
	}
	cases := []struct {
		rule Rule
		want []string // each violation's path, joined by " > "
	}{
		{Rule{Name: "leaf", From: []string{"m/proto"}, StdOnly: true}, []string{"m/proto > m/rest"}},
		{Rule{Name: "leaf-ok", From: []string{"m/leaf", "m/pure"}, StdOnly: true}, nil},
		{Rule{Name: "no-http", From: []string{"m/leaf", "m/proto"}, Forbid: []string{"net/http/..."}},
			[]string{"m/proto > m/rest > net/http"}},
		{Rule{Name: "deep", From: []string{"m/jm"}, Forbid: []string{"m/heap"}}, []string{"m/jm > m/coord > m/op > m/heap"}},
		{Rule{Name: "direct only", From: []string{"m/jm"}, Forbid: []string{"m/heap"}, Direct: true}, nil},
		{Rule{Name: "subtree", From: []string{"m/conn/..."}, Forbid: []string{"m/internal/..."}, Allow: []string{"m/conn/internal/..."}, Direct: true},
			[]string{"m/conn > m/internal/crash"}},
	}
	for _, c := range cases {
		var got []string
		for _, v := range Check(g, []Rule{c.rule}) {
			got = append(got, strings.Join(v.Path, " > "))
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("rule %s: got violations %q, want %q", c.rule.Name, got, c.want)
		}
	}
}

// TestMatch pins the pattern syntax.
func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/bc", false},
		{"a/b/...", "a/b", true},
		{"a/b/...", "a/b/c/d", true},
		{"a/b/...", "a/bc", false},
	} {
		if got := Match(c.pattern, c.path); got != c.want {
			t.Errorf("Match(%q, %q) = %v", c.pattern, c.path, got)
		}
	}
}

// TestRules checks every rule over the module's real import graph (non-test
// code), naming the import path of each violation.
func TestRules(t *testing.T) {
	g := moduleGraph(t)
	for _, r := range Rules {
		n := 0
		for p := range g.Imports {
			if matchAny(r.From, p) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("rule %q: no package matches %q: a package was renamed and the rule checks nothing", r.Name, r.From)
		}
	}
	seen := map[[3]string]bool{}
	for _, v := range Check(g, Rules) {
		k := [3]string{v.Rule, v.Path[0], v.Path[1]}
		if todo, ok := Unfinished[k]; ok {
			seen[k] = true
			t.Logf("unfinished: %s\n    to do: %s", v, todo)
			continue
		}
		t.Error(v)
	}
	for k := range Unfinished {
		if !seen[k] {
			t.Errorf("rule %q holds now for %s -> %s: remove the entry from Unfinished", k[0], k[1], k[2])
		}
	}
}

// moduleGraph lists the module's packages and their dependencies.
func moduleGraph(t *testing.T) Graph {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,Standard", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./... in %s: %v\n%s", root, err, stderr.String())
	}
	g := Graph{Imports: map[string][]string{}, Std: map[string]bool{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Standard   bool
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list's output: %v", err)
		}
		g.Imports[p.ImportPath] = p.Imports
		g.Std[p.ImportPath] = p.Standard
	}
	if len(g.Imports) < 100 {
		t.Fatalf("go list found only %d packages", len(g.Imports))
	}
	return g
}
