package chaos

import (
	"math"
	"testing"
)

// TestClaimsIn checks the account of a queue while an orphan waited: each
// worker's claims inside the window (takeovers told apart, other queues
// and claims outside it left out), and the worker able to claim that
// claimed nothing; a worker whose slots were all taken by jobs it had to
// prefer is not named as able.
func TestClaimsIn(t *testing.T) {
	f := &dbFacts{
		attempts: map[int64][]attemptRow{
			// job 5: taken over by w2 at 150 from the dead owner.
			5: {{job: 5, attempt: 1, owner: "run-w9", claimed: 10, ended: 150, outcome: "lease_expired"},
				{job: 5, attempt: 2, owner: "run-w2", claimed: 150, ended: 170, outcome: "completed"}},
			7:  {{job: 7, attempt: 1, owner: "run-w2", claimed: 120, ended: 130, outcome: "completed"}},
			30: {{job: 30, attempt: 1, owner: "run-w2", claimed: 180, ended: 190, outcome: "completed"}},
			// outside the window, and in another queue.
			40: {{job: 40, attempt: 1, owner: "run-w3", claimed: 250, ended: 260, outcome: "completed"}},
			41: {{job: 41, attempt: 1, owner: "run-w3", claimed: 150, ended: 160, outcome: "completed"}},
			// w4 holds its one slot with job 1, before job 3 in claim order.
			1: {{job: 1, attempt: 1, owner: "run-w4", claimed: 0, ended: 300, outcome: "completed"}},
		},
		queues: map[int64]string{5: "q", 7: "q", 30: "q", 40: "q", 41: "other", 1: "q"},
	}
	forever := span{0, math.MaxInt64}
	who := claimers{
		lives: []workerLife{{owner: "run-w2", life: forever}, {owner: "run-w3", life: forever},
			{owner: "run-w4", life: forever}, {owner: "run-w5", life: span{0, 50}}},
		uses:  slotUses(f),
		slots: map[string]int{"q": 1},
	}
	got := claimsIn(f, orphan{queue: "q", job: 3}, span{100, 200}, who)
	want := "w2 claimed 2 pending and 1 taken over (jobs 5-30); able to claim but claimed nothing: w3"
	if got != want {
		t.Errorf("claimsIn =\n%s\nwant\n%s", got, want)
	}
	if got := claimsIn(f, orphan{queue: "q", job: 3}, span{300, 400}, claimers{}); got != "no claims in the queue meanwhile" {
		t.Errorf("claimsIn of a quiet window = %q", got)
	}
}
