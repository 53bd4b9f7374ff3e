package testsvc

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes c's process die with the test process, so a test
// killed outright leaves no server behind.
func dieWithTest(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
