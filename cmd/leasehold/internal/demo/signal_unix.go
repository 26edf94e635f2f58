//go:build unix

package demo

import (
	"os"
	"syscall"
)

// canFreeze reports whether freeze and thaw work on this system.
const canFreeze = true

// freeze stops a process (SIGSTOP): it keeps its leases and sockets but
// runs nothing, like a long GC pause or a suspended VM.
func freeze(p *os.Process) error { return p.Signal(syscall.SIGSTOP) }

// thaw resumes a frozen process (SIGCONT).
func thaw(p *os.Process) error { return p.Signal(syscall.SIGCONT) }
