package leasehold_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/view"
)

// TestRunAtYearIsUTC: RunAt's range, the years 1 to 9999, holds for the
// instant the drivers store, whatever RunAt's location. An instant past
// 9999 UTC given in a zone west of UTC (still 9999 there) is refused on
// every driver, as it is in UTC: stored, it could not be written as
// JSON. The last hour of 9999 UTC is accepted, and its job is.
func TestRunAtYearIsUTC(t *testing.T) {
	west := time.FixedZone("EST", -5*3600)
	east := time.FixedZone("CEST", 2*3600)
	refused := []time.Time{
		time.Date(9999, 12, 31, 23, 0, 0, 0, west), // 10000-01-01T04:00Z
		time.Date(1, 1, 1, 1, 0, 0, 0, east),       // 0000-12-31T23:00Z
	}
	accepted := []time.Time{
		time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 18, 0, 0, 0, west), // 9999-12-31T23:00Z
		time.Date(1, 1, 1, 1, 0, 0, 0, time.UTC),
	}
	eachDriver(t, func(t *testing.T, d driver.Driver) {
		c, err := leasehold.NewClient(leasehold.Config{Driver: d})
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range refused {
			_, err := c.Insert(t.Context(), leasehold.RawArgs{KindName: "k"}, &leasehold.InsertOpts{RunAt: at})
			checkRunAtRefused(t, at, err, -1)
			_, err = c.InsertMany(t.Context(), nil, []leasehold.InsertManyParams{
				{Args: leasehold.RawArgs{KindName: "k"}, Opts: &leasehold.InsertOpts{RunAt: at}}})
			checkRunAtRefused(t, at, err, 0)
		}
		for _, at := range accepted {
			res, err := c.Insert(t.Context(), leasehold.RawArgs{KindName: "k"}, &leasehold.InsertOpts{RunAt: at})
			if err != nil {
				t.Errorf("RunAt %s: %v", at, err)
				continue
			}
			row, err := c.GetJob(t.Context(), res.Job.ID)
			if err != nil {
				t.Fatalf("GetJob: %v", err)
			}
			if !row.RunAt.Equal(at) {
				t.Errorf("RunAt %s stored as %s", at, row.RunAt)
			}
			if _, err := json.Marshal(view.NewJobView(row.JobRow, time.Now())); err != nil {
				t.Errorf("RunAt %s: job cannot be written as JSON: %v", at, err)
			}
		}
	})
}

// checkRunAtRefused fails t unless err refuses RunAt at as out of range,
// naming run_at, with index.
func checkRunAtRefused(t *testing.T, at time.Time, err error, index int) {
	t.Helper()
	var bad *leasehold.InvalidInputError
	if !errors.Is(err, leasehold.ErrInvalidArgs) || !errors.As(err, &bad) || bad.Field != "run_at" || bad.Index != index {
		t.Errorf("RunAt %s (%s): got %v, want an *InvalidInputError on run_at, index %d, matching ErrInvalidArgs",
			at, at.UTC(), err, index)
	}
}
