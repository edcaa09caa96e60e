package cli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
)

// A connector written in a separate module (testdata/extconnector: a source
// and a two-phase-commit sink on the public contracts only, and a job using
// them) builds against Weir and passes the kill test: killed with SIGKILL
// at random moments and resumed, its committed output is exactly right.
func TestExternalModuleConnector(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	if err := os.CopyFS(mod, os.DirFS("testdata/extconnector")); err != nil {
		t.Fatal(err)
	}
	gomod := fmt.Sprintf("module example.com/extconnector\n\ngo 1.26\n\nrequire github.com/weirhq/weir v0.0.0\n\nreplace github.com/weirhq/weir => %s\n", root)
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	// Weir's sums cover every module the connector needs.
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(mod, "go.sum"), sums, 0o644)
	bin := filepath.Join(mod, "extjob")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-mod=mod", "-o", bin, "./cmd/extjob")
	build.Dir = mod
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the external module: %v\n%s", err, out)
	}
	seed := testseed.New(t)
	for i, unaligned := range []bool{false, true} {
		t.Run(fmt.Sprintf("unaligned=%t", unaligned), func(t *testing.T) {
			killAndResumeProgram(t, rand.New(rand.NewPCG(seed, uint64(i))), unaligned, bin, nil, "in/", "extjob: final checkpoint")
		})
	}
}
