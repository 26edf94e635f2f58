//go:build unix

package fleet

import (
	"os"
	"syscall"
)

// CanFreeze reports whether Freeze works on this system.
const CanFreeze = true

// freeze stops a process (SIGSTOP): it keeps its leases and sockets but
// runs nothing, like a long GC pause or a suspended VM.
func freeze(p *os.Process) error { return p.Signal(syscall.SIGSTOP) }

// thaw resumes a frozen process (SIGCONT).
func thaw(p *os.Process) error { return p.Signal(syscall.SIGCONT) }

// terminate asks a process to stop gracefully (SIGTERM).
func terminate(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
