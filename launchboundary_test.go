package weir_test

import (
	"context"
	"go/parser"
	"go/token"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/weirhq/weir"
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

// OnSubmit is given the Job that ExecuteAsync then returns, and may hand it
// to other goroutines at once: a goroutine that reads it while ExecuteAsync
// returns must see the same job (run with -race: ExecuteAsync must not write
// the Job again after OnSubmit).
func TestOnSubmitJobIsTheReturnedJob(t *testing.T) {
	var submitted *weir.Job
	read := make(chan string, 1)
	env := weir.NewEnvironment(weir.Config{Logger: slog.New(slog.DiscardHandler), OnSubmit: func(j *weir.Job) {
		submitted = j
		go func() { read <- j.ID() + " " + j.RESTAddr() }()
	}})
	weir.Discard(weir.FromSlice(env, []int{1, 2, 3}))
	j, err := env.ExecuteAsync(context.Background(), "on-submit")
	if err != nil {
		t.Fatal(err)
	}
	if j != submitted {
		t.Errorf("ExecuteAsync returned %p, OnSubmit was given %p", j, submitted)
	}
	if got, want := <-read, j.ID()+" "; got != want {
		t.Errorf("a goroutine started in OnSubmit read %q, want %q", got, want)
	}
	if _, err := j.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}
