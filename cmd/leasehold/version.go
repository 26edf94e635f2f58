package main

import (
	"runtime"
	"runtime/debug"
)

// version returns the module version the binary was built from (as `go
// install ...@v1.2.3` records it), or "devel" for a build from a working
// tree, followed by the VCS revision when the build recorded one and the
// Go version.
func version() string {
	v, rev := "devel", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
			v = mv
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = s.Value[:12]
			}
		}
	}
	if rev != "" {
		v += " (" + rev + ")"
	}
	return v + " " + runtime.Version()
}
