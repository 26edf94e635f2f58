package cli

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/view"
)

// RenderPeriodic prints the schedules of periodic jobs; now is the
// database clock.
func RenderPeriodic(w io.Writer, rows []*leasehold.PeriodicRow, now time.Time) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no periodic jobs")
		return err
	}
	t := NewTable(w, "NAME", "SPEC", "KIND", "QUEUE", "LAST SLOT", "LAST JOB", "NEXT SLOT", "STATUS")
	for _, r := range rows {
		job := "-"
		if r.LastJobID != 0 {
			job = strconv.FormatInt(r.LastJobID, 10)
		}
		next := "never"
		if !r.NextSlot.IsZero() {
			next = Timestamp(r.NextSlot) + " (" + Relative(r.NextSlot, now) + ")"
		}
		note := "ok"
		if view.Overdue(r, now) {
			note = "overdue: is a process running this schedule?"
		}
		t.Row(Truncate(r.Name, 60), Truncate(r.Spec, 60), Truncate(r.Kind, 40), Truncate(r.Queue, 40),
			Timestamp(r.LastSlot), job, next, note)
	}
	return t.Flush()
}
