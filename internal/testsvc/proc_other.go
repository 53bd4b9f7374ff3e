//go:build !linux

package testsvc

import (
	"errors"
	"os/exec"
)

// dieWithTest: only Linux can tie a child's life to its parent's.
func dieWithTest(*exec.Cmd) {}

// runAs is not supported off Linux: the tests run their servers as
// themselves there.
func runAs(*exec.Cmd, string) error { return errors.New("testsvc: cannot switch user on this system") }
