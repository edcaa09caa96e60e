package kafkakeyedcount_test

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the weir child if the test binary
// dies first (a test timeout, SIGKILL), so that no job outlives its test.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
