package scratch

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestSweepTakesOnlyTheDead: a directory whose owner died (here: a child
// process that made one and was killed) is swept; a live one, and one
// without a lock file, are not; release removes its own.
func TestSweepTakesOnlyTheDead(t *testing.T) {
	if os.Getenv("WEIR_SCRATCH_CHILD") != "" {
		dir, _, err := Dir("weir-scratch-test-", "")
		if err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString(dir + "\n")
		select {} // until killed
	}
	t.Setenv("TMPDIR", t.TempDir())
	live, release, err := Dir("weir-scratch-test-", "")
	if err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(os.TempDir(), "weir-scratch-test-foreign")
	if err := os.Mkdir(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestSweepTakesOnlyTheDead$")
	child.Env = append(os.Environ(), "WEIR_SCRATCH_CHILD=1", "TMPDIR="+os.TempDir())
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, _ := out.Read(buf)
	dead := string(buf[:n-1])
	if _, err := os.Stat(dead); err != nil {
		t.Fatalf("the child's directory %q: %v", dead, err)
	}
	if got := Sweep("weir-scratch-test-"); got != 0 {
		t.Fatalf("swept %d directories while every owner lives", got)
	}
	child.Process.Kill()
	child.Wait()
	if got := Sweep("weir-scratch-test-"); got != 1 {
		t.Fatalf("swept %d directories after the child died, want 1", got)
	}
	for _, d := range []string{live, foreign} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("%s was swept: %v", d, err)
		}
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("the dead child's directory is still there: %v", err)
	}
	release()
	if _, err := os.Stat(live); !os.IsNotExist(err) {
		t.Fatalf("release left %s: %v", live, err)
	}
}
