package weir_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"strconv"
	"strings"
	"testing"
)

// The root package is the DataStream API: it hands a compiled job to
// internal/launch, which alone builds and starts the cluster. This test
// reads the imports of the root's non-test files and fails, naming the
// file, on any import of the runtime or control plane it must reach only
// through internal/launch.
func TestRootLaunchesThroughInternalLaunch(t *testing.T) {
	forbidden := []string{"cluster", "jobmanager", "taskmanager", "task", "rest", "protocol", "restart", "barrier", "checkpoint/coordinator", "checkpoint/storage"}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	launches := false
	for _, pkg := range pkgs {
		for name, f := range pkg.Files {
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				launches = launches || path == "github.com/weirhq/weir/internal/launch"
				for _, p := range forbidden {
					if path == "github.com/weirhq/weir/internal/"+p {
						t.Errorf("%s imports %s: the root package starts jobs only through internal/launch", name, path)
					}
				}
			}
		}
	}
	if !launches {
		t.Errorf("no root file imports internal/launch: the walk is broken, or Execute no longer goes through it")
	}
}
