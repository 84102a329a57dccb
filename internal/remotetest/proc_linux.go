package remotetest

import "syscall"

// dieWithParent has the kernel kill the server if the test binary dies
// without stopping it.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
