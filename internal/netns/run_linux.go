package netns

import (
	"os/exec"
	"runtime"
	"syscall"
)

// runOrphanless runs cmd so that it does not outlive this process: the
// kernel kills it (SIGKILL) when the thread that started it exits. An ip
// command left running by a killed run would otherwise go on adding a
// link or namespace after the next run's Cleanup looked, and that run
// would find the name taken by something it does not know as its own.
// The goroutine keeps its thread while the command runs, since the
// signal follows the starting thread, not the process.
func runOrphanless(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd.Run()
}
