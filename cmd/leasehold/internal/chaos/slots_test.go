package chaos

import (
	"math"
	"slices"
	"testing"
)

// TestFullSpans: a worker's slots count as full for job J only while
// leases it had to prefer over J fill them all: takeovers, jobs before J
// in claim order, and jobs claimed before J was claimable. Newer jobs
// claimed once J was claimable leave it able to claim J, and a slot freed
// and taken again in one instant leaves no gap.
func TestFullSpans(t *testing.T) {
	const j = 100
	uses := []slotUse{
		{span: span{0, 50}, job: 10},
		{span: span{10, 70}, job: 500, takeover: true},
		{span: span{20, 90}, job: 600}, // newer than J: no excuse
		{span: span{50, 80}, job: 20},  // takes the slot 10 freed at 50
		{span: span{85, math.MaxInt64}, job: 30},
		{span: span{95, 120}, job: 40},
	}
	got := fullSpans(uses, 2, orphan{job: j})
	want := []span{{10, 70}, {95, 120}}
	if !slices.Equal(got, want) {
		t.Errorf("fullSpans = %v, want %v", got, want)
	}
	if got := fullSpans(uses, 3, orphan{job: j}); len(got) != 0 {
		t.Errorf("with 3 slots: fullSpans = %v, want none (one slot holds a newer job)", got)
	}
	if got := fullSpans(uses, 2, orphan{job: 15}); !slices.Equal(got, []span{{10, 50}}) {
		t.Errorf("for job 15: fullSpans = %v, want [{10 50}] (the takeover beside job 10 only)", got)
	}
	// Job 600 was claimed at 20, before J could be: its slot counts until
	// it ends at 90, beside the takeover, job 20 and job 30.
	if got, want := fullSpans(uses, 2, orphan{job: j, claimable: 30}), []span{{10, 80}, {85, 90}, {95, 120}}; !slices.Equal(got, want) {
		t.Errorf("J claimable from 30: fullSpans = %v, want %v", got, want)
	}
	// Claimable from 15, J was passed over for job 600 at 20.
	if got, want := fullSpans(uses, 2, orphan{job: j, claimable: 15}), []span{{10, 70}, {95, 120}}; !slices.Equal(got, want) {
		t.Errorf("J claimable from 15: fullSpans = %v, want %v", got, want)
	}
}

// TestSlotUses: a claim took over a lease when the attempt before it
// expired at the claim's moment (the claim's statement ends it); an
// attempt the watcher ended earlier was returned to pending, not taken
// over. Open attempts hold their slot to the end.
func TestSlotUses(t *testing.T) {
	f := &dbFacts{
		queues: map[int64]string{1: Queue, 2: Queue},
		attempts: map[int64][]attemptRow{
			1: {
				{job: 1, attempt: 1, owner: "a", claimed: 10, ended: 30, outcome: "lease_expired"},
				{job: 1, attempt: 2, owner: "b", claimed: 30, ended: 40, outcome: "completed"},
			},
			2: {
				{job: 2, attempt: 1, owner: "a", claimed: 10, ended: 25, outcome: "lease_expired"},
				{job: 2, attempt: 2, owner: "b", claimed: 35},
			},
		},
	}
	uses := slotUses(f)
	b := uses[ownerQueue{"b", Queue}]
	slices.SortFunc(b, func(x, y slotUse) int { return int(x.job - y.job) })
	want := []slotUse{
		{span: span{30, 40}, job: 1, takeover: true},
		{span: span{35, math.MaxInt64}, job: 2},
	}
	if !slices.Equal(b, want) {
		t.Errorf("b's slots = %v, want %v", b, want)
	}
	if a := uses[ownerQueue{"a", Queue}]; len(a) != 2 || a[0].takeover || a[1].takeover {
		t.Errorf("a's slots = %v, want two first claims", a)
	}
}

// TestAvailableForSlots: a worker alive throughout but with its slots
// full of leases it had to take first cannot claim the orphan; the bound
// allows that time, and no more.
func TestAvailableForSlots(t *testing.T) {
	const bound, ttl, death, job = 2_900, 2_000, 10_000, 100
	c := claimers{
		lives: []workerLife{{owner: "w", life: span{0, math.MaxInt64}}},
		uses: map[ownerQueue][]slotUse{{"w", Queue}: {
			{span: span{12_000, 13_000}, job: 50},
			{span: span{12_500, 13_500}, job: 60, takeover: true},
			{span: span{13_000, 14_000}, job: 900}, // newer: no excuse
		}},
		slots: map[string]int{Queue: 2},
	}
	avail := c.availableFor(orphan{queue: Queue, job: job})
	if got, want := allowedDelay(bound, ttl, death, 16_000, avail), int64(bound+500); got != want {
		t.Errorf("allowed %d, want %d (the bound and 500 with both slots full)", got, want)
	}
	if got := allowedDelay(bound, ttl, death, 16_000, c.availableFor(orphan{queue: "other", job: job})); got != bound {
		t.Errorf("in a queue without slot figures: allowed %d, want the bound %d", got, bound)
	}
}
