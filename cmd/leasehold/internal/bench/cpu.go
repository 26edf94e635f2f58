package bench

import (
	"runtime"
	"time"
)

// costMark is the process's CPU time and heap allocation count at the
// start of a measurement.
type costMark struct {
	cpu    time.Duration
	cpuOK  bool
	allocs uint64
}

func startCost() costMark {
	cpu, ok := processCPU()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return costMark{cpu: cpu, cpuOK: ok, allocs: ms.Mallocs}
}

// Cost is what a measurement cost the bench process itself (the client or
// the bare loops, with their driver) per job: CPU time, which shares the
// machine with the database, and heap allocations, which cost CPU again
// in the garbage collector.
type Cost struct {
	CPUMicrosPerJob float64 `json:"cpu_us_per_job,omitempty"`
	AllocsPerJob    float64 `json:"allocs_per_job,omitempty"`
}

// perJob returns the cost since the mark per job. CPU time is 0 where the
// platform cannot tell.
func (m costMark) perJob(jobs int) Cost {
	if jobs == 0 {
		return Cost{}
	}
	cpu, ok := processCPU()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	c := Cost{AllocsPerJob: float64(ms.Mallocs-m.allocs) / float64(jobs)}
	if m.cpuOK && ok {
		c.CPUMicrosPerJob = float64(cpu-m.cpu) / float64(time.Microsecond) / float64(jobs)
	}
	return c
}
