//go:build !unix

package chaos

import "syscall"

// Placeholders: the harness needs SIGSTOP and SIGCONT, which only Unix
// systems have (see supported).
const (
	sigstop = syscall.Signal(19)
	sigcont = syscall.Signal(18)
	sigterm = syscall.Signal(15)
)

// supported reports whether the harness can run on this system.
const supported = false
