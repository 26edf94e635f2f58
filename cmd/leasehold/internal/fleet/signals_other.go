//go:build !unix

package fleet

import "os"

// CanFreeze reports whether Freeze works on this system: freezing needs
// SIGSTOP, which only Unix systems have.
const CanFreeze = false

func freeze(*os.Process) error { return ErrCannotFreeze }

func thaw(*os.Process) error { return nil }

// terminate does nothing: without SIGTERM, closing the worker's standard
// input is how it is asked to stop.
func terminate(*os.Process) error { return nil }
