//go:build !linux

package remotetest

import "syscall"

// dieWithParent has no equivalent here: Stop ends the server, and a
// crashed test binary leaves it running.
func dieWithParent() *syscall.SysProcAttr { return nil }
