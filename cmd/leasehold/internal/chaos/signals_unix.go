//go:build unix

package chaos

import "syscall"

// The signals the harness sends its workers.
const (
	sigstop = syscall.SIGSTOP // freeze: the process keeps its leases and sockets but runs nothing
	sigcont = syscall.SIGCONT // resume a frozen process
	sigterm = syscall.SIGTERM // graceful stop
)

// supported reports whether the harness can run on this system.
const supported = true
