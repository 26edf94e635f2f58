package leaseholdprom_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	leaseholdprom "github.com/leasehold/leasehold/contrib/prometheus"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

// statsFailingDriver is a real driver whose ActiveQueueStats fails.
type statsFailingDriver struct{ driver.Driver }

func (statsFailingDriver) ActiveQueueStats(context.Context, *driver.ActiveStatsParams) ([]*leasehold.QueueStats, error) {
	return nil, errors.New("database unreachable")
}

// TestFailureCountedInItsScrape: the scrape whose reading of the queue
// gauges fails already shows that failure in
// leasehold_queue_stats_failures_total, not only the next scrape.
func TestFailureCountedInItsScrape(t *testing.T) {
	_, reg, _ := metricsClient(t, leasehold.Config{Driver: statsFailingDriver{sqlitetest.Open(t)}},
		leaseholdprom.Options{QueueStatsInterval: time.Hour})
	if got := gather(t, reg, "leasehold_queue_stats_failures_total"); len(got) != 1 || got[0].value != 1 {
		t.Errorf("leasehold_queue_stats_failures_total in the scrape whose reading failed = %+v, want 1", got)
	}
	if got := gather(t, reg, "leasehold_queue_jobs"); len(got) != 0 {
		t.Errorf("leasehold_queue_jobs after a failed reading = %+v, want none", got)
	}
}
