package crashpoint

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The helper process hits point "p" three times; armed at p:2 it dies on
// the second hit, killed by SIGKILL, having printed only what came before.
func TestHitKillsAtTheArmedHit(t *testing.T) {
	if os.Getenv("CRASHPOINT_HELPER") == "1" {
		for i := 1; i <= 3; i++ {
			Hit("other")
			os.Stdout.WriteString("before " + string(rune('0'+i)) + "\n")
			Hit("p")
		}
		os.Exit(0)
	}
	for _, tc := range []struct {
		env    string
		want   string
		killed bool
	}{
		{"p:2", "before 1\nbefore 2\n", true},
		{"p", "before 1\n", true},
		{"q", "before 1\nbefore 2\nbefore 3\n", false},
		{"", "before 1\nbefore 2\nbefore 3\n", false},
		{"p:x", "before 1\nbefore 2\nbefore 3\n", false},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHitKillsAtTheArmedHit$")
		cmd.Env = append(os.Environ(), "CRASHPOINT_HELPER=1", EnvVar+"="+tc.env)
		out, err := cmd.Output()
		if got := string(out); got != tc.want {
			t.Errorf("%s=%q: output %q, want %q", EnvVar, tc.env, got, tc.want)
		}
		killed := err != nil && strings.Contains(err.Error(), "signal: killed")
		if killed != tc.killed {
			t.Errorf("%s=%q: killed=%v (err %v), want %v", EnvVar, tc.env, killed, err, tc.killed)
		}
	}
}
