package demo

import (
	"strings"
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
)

// TestDescribeMove checks what the story says of a followed lease that
// moved on: a job its worker finished on that very lease (a frozen worker
// whose leases nobody took over, woken) never came back, while a lease
// that expired did.
func TestDescribeMove(t *testing.T) {
	d := &demo{fleet: fleet.New(nil)}
	job := func(state leasehold.JobState, attempt int, owner string, attempts ...*leasehold.Attempt) *leasehold.JobInfo {
		return &leasehold.JobInfo{
			JobRow:   &leasehold.JobRow{ID: 6, State: state, Attempt: attempt, LeaseOwner: owner},
			Attempts: attempts,
		}
	}
	ended := func(n int, o leasehold.Outcome) *leasehold.Attempt {
		return &leasehold.Attempt{JobID: 6, Attempt: n, Outcome: o}
	}
	cases := []struct {
		name      string
		info      *leasehold.JobInfo
		want      string
		forbidden []string
	}{
		{
			name:      "finished on its own lease",
			info:      job(leasehold.StateCompleted, 1, "", ended(1, leasehold.OutcomeCompleted)),
			want:      "job 6 was not taken over: w2 finished it on its own lease (attempt 1 completed)",
			forbidden: []string{"is back"},
		},
		{
			name: "taken over",
			info: job(leasehold.StateCompleted, 2, "", ended(1, leasehold.OutcomeLeaseExpired), ended(2, leasehold.OutcomeCompleted)),
			want: "job 6 is back: w2's attempt 1 ended lease_expired; now completed (attempt 2)",
		},
		{
			name: "back in the queue",
			info: job(leasehold.StatePending, 1, "", ended(1, leasehold.OutcomeLeaseExpired)),
			want: "job 6 is back: w2's attempt 1 ended lease_expired; the stuck watcher put it back in the queue",
		},
		{
			name: "leased by another",
			info: job(leasehold.StateProcessing, 2, "demo-x-w3", ended(1, leasehold.OutcomeLeaseExpired), ended(2, leasehold.OutcomeRunning)),
			want: "job 6 is back: w2's attempt 1 ended lease_expired; attempt 2 is leased by demo-x-w3",
		},
	}
	for _, c := range cases {
		got := d.describeMove(c.info, "w2", 1)
		if got != c.want {
			t.Errorf("%s: describeMove = %q, want %q", c.name, got, c.want)
		}
		for _, f := range c.forbidden {
			if strings.Contains(got, f) {
				t.Errorf("%s: describeMove = %q says %q", c.name, got, f)
			}
		}
	}
}
