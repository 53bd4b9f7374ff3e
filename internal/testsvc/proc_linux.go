package testsvc

import (
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

// dieWithTest makes c's process die with the test process, so a test
// killed outright leaves no server behind.
func dieWithTest(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

// runAs makes c's process run as name, switched before it starts: a
// process that switched user itself would lose dieWithTest's signal.
func runAs(c *exec.Cmd, name string) error {
	u, err := user.Lookup(name)
	if err != nil {
		return err
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return err
	}
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return nil
}
