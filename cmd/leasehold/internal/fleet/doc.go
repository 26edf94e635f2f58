// Package fleet runs the worker subprocesses of the demo, the chaos
// harness and `leasehold hosts`, and does the faults the first two inflict
// on them. It starts a worker
// (`leasehold work`, `leasehold chaos worker`) with the database location
// in its environment, reads the counters it reports on its standard output
// (Report lines, see Emitter), keeps the tail of its log, tracks its exit,
// and kills (SIGKILL), freezes (SIGSTOP) and thaws (SIGCONT) it. A Trap,
// the stand-in payment provider's stall hook, catches a worker in the
// middle of a charge so that a kill or a freeze lands there.
//
// The chaos harness drives these faults on a random schedule; the demo
// runs them as a narrated script.
package fleet
