package bench

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
)

// lingering stands in for a driver that asks for lingering finishes.
type lingering struct{ driver.Driver }

func (lingering) FinishLinger() time.Duration { return time.Second }

// The counting wrapper must not hide the driver's FinishLinger: the bench
// would then measure a client that writes its outcomes unlike a user's.
func TestCountedKeepsFinishLinger(t *testing.T) {
	if got := driver.FinishLingerOf(counted(lingering{}, &callCounts{})); got != time.Second {
		t.Errorf("FinishLinger through the counting wrapper = %v, want 1s", got)
	}
	if got := driver.FinishLingerOf(counted(countingDriver{}, &callCounts{})); got != 0 {
		t.Errorf("FinishLinger of a driver without one = %v, want 0", got)
	}
}
