package drivertest

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
)

// CheckPauseAfterUpgrade checks a driver just migrated from an older
// schema whose queue holds one pending job of kind "k": the queue can be
// paused (no claim takes the job, QueueStats reports the pause), then
// resumed (the job is claimed). A driver's schema upgrade tests call it.
func CheckPauseAfterUpgrade(t testing.TB, d driver.Driver, queue string) {
	t.Helper()
	ctx := t.Context()
	if err := d.PauseQueue(ctx, queue); err != nil {
		t.Fatalf("PauseQueue after the upgrade: %v", err)
	}
	claim := func() int {
		t.Helper()
		jobs, err := d.Claim(ctx, &driver.ClaimParams{
			Queue: queue, Kinds: []string{"k"}, Owner: "w", TTL: time.Minute, Limit: 10,
		})
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		return len(jobs)
	}
	if n := claim(); n != 0 {
		t.Fatalf("claimed %d jobs of a paused queue after the upgrade", n)
	}
	qs, err := d.QueueStats(ctx)
	if err != nil || len(qs) != 1 || !qs[0].Paused {
		t.Fatalf("QueueStats after pause = %+v, %v; want queue %s paused", qs, err, queue)
	}
	if err := d.ResumeQueue(ctx, queue); err != nil {
		t.Fatalf("ResumeQueue: %v", err)
	}
	if n := claim(); n != 1 {
		t.Fatalf("claimed %d jobs after resume, want the job from before the upgrade", n)
	}
}
