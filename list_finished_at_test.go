package leasehold_test

import (
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestFinishedAtKeysetYearIsUTC: a ListJobs finish-time keyset outside the
// years 1 to 9999 UTC, in whatever location, is refused on every driver
// with ErrInvalidArgs (field finished_at), not met with a raw SQL error
// on PostgreSQL or a wrapped-around time on SQLite; the last hour of 9999
// UTC is a keyset like any other.
func TestFinishedAtKeysetYearIsUTC(t *testing.T) {
	west := time.FixedZone("EST", -5*3600)
	refused := []time.Time{
		time.Date(9999, 12, 31, 23, 0, 0, 0, west), // 10000-01-01T04:00Z
		time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-5000, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	eachDriver(t, func(t *testing.T, d driver.Driver) {
		c, err := leasehold.NewClient(leasehold.Config{Driver: d})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Insert(t.Context(), leasehold.RawArgs{KindName: "k"}, nil); err != nil {
			t.Fatal(err)
		}
		for _, at := range refused {
			_, err := c.ListJobs(t.Context(), &leasehold.ListParams{ByFinish: true, FinishedAt: at, AfterID: 1})
			var bad *leasehold.InvalidInputError
			if !errors.Is(err, leasehold.ErrInvalidArgs) || !errors.As(err, &bad) || bad.Field != "finished_at" || bad.Index != -1 {
				t.Errorf("FinishedAt %s (%s): got %v, want an *InvalidInputError on finished_at matching ErrInvalidArgs",
					at, at.UTC(), err)
			}
		}
		last := time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC)
		if _, err := c.ListJobs(t.Context(), &leasehold.ListParams{ByFinish: true, Desc: true, FinishedAt: last, BeforeID: 1}); err != nil {
			t.Errorf("FinishedAt %s: %v", last, err)
		}
	})
}
