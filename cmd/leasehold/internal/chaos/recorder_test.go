package chaos

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
)

// lingering stands in for a driver that asks for lingering finishes.
type lingering struct{ driver.Driver }

func (lingering) FinishLinger() time.Duration { return time.Second }

// The recording wrapper must not hide the driver's FinishLinger: the
// harness's workers would then write their outcomes unlike a user's.
func TestRecorderKeepsFinishLinger(t *testing.T) {
	d, _ := wrap(lingering{}, "", nil)
	if got := driver.FinishLingerOf(d); got != time.Second {
		t.Errorf("FinishLinger through the recorder = %v, want 1s", got)
	}
}
