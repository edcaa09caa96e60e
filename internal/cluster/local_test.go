package cluster

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestGatewaysAreLoopback reads the package's source: every TaskManager the
// JobManager registers, and every JobManager gateway a TaskManager is
// created with, must be a protocol loopback gateway, so that nothing
// crosses between them except encoded messages.
func TestGatewaysAreLoopback(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var registers, creates int
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch name := callee(call); name {
			case "RegisterTaskManager":
				registers++
				if len(call.Args) != 2 || callee(call.Args[0]) != "protocol.LoopbackRegistration" ||
					callee(call.Args[1]) != "protocol.NewLoopbackTaskManager" {
					t.Errorf("%s: the JobManager registers a TaskManager not through protocol.LoopbackRegistration and protocol.NewLoopbackTaskManager", fset.Position(call.Pos()))
				}
			case "taskmanager.New":
				creates++
				if len(call.Args) != 3 || callee(call.Args[1]) != "protocol.NewLoopbackJobManager" {
					t.Errorf("%s: a TaskManager reaches the JobManager not through protocol.NewLoopbackJobManager", fset.Position(call.Pos()))
				}
			}
			return true
		})
	}
	if registers == 0 || creates == 0 {
		t.Fatalf("found %d RegisterTaskManager and %d taskmanager.New calls; the test no longer sees how the cluster is wired", registers, creates)
	}
}

// callee names what e calls: "pkg.Func", or the method name for x.Method(...).
func callee(e ast.Expr) string {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return ""
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	if id, ok := sel.X.(*ast.Ident); ok && (id.Name == "protocol" || id.Name == "taskmanager") {
		return id.Name + "." + sel.Sel.Name
	}
	return sel.Sel.Name
}
