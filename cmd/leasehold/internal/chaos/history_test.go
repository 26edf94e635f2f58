package chaos

import "testing"

// TestOverlaps checks the overlap detector on histories written by hand,
// so that its zero in a real run means something.
func TestOverlaps(t *testing.T) {
	const s = 1_000_000 // µs
	const ttl = 2 * s
	hist := func(as ...attemptRow) *dbFacts {
		f := &dbFacts{attempts: map[int64][]attemptRow{}}
		for _, a := range as {
			a.job = 1
			f.attempts[1] = append(f.attempts[1], a)
		}
		return f
	}
	cases := []struct {
		name                            string
		f                               *dbFacts
		renewals                        map[leaseKey]int64
		overlaps, evidenced, inversions int
	}{
		{"takeover after the lease ran out", hist(
			attemptRow{attempt: 1, claimed: 10 * s, heartbeat: 11 * s, ended: 13*s + 1, outcome: "lease_expired"},
			attemptRow{attempt: 2, claimed: 13*s + 1, ended: 14 * s, outcome: "completed"}), nil, 0, 1, 0},
		{"takeover while the renewed lease lived", hist(
			attemptRow{attempt: 1, claimed: 10 * s, heartbeat: 11 * s, ended: 12*s + s/2, outcome: "lease_expired"},
			attemptRow{attempt: 2, claimed: 12*s + s/2, ended: 14 * s, outcome: "completed"}), nil, 1, 1, 0},
		{"renewal reported by the worker, missing from the history", hist(
			attemptRow{attempt: 1, claimed: 10 * s, ended: 12*s + s/2, outcome: "lease_expired"},
			attemptRow{attempt: 2, claimed: 12*s + s/2, ended: 14 * s, outcome: "completed"}),
			map[leaseKey]int64{{job: 1, attempt: 1}: 11 * s}, 1, 1, 0},
		{"watcher moved it before the lease ran out", hist(
			attemptRow{attempt: 1, claimed: 10 * s, ended: 11 * s, outcome: "lease_expired"},
			attemptRow{attempt: 2, claimed: 11*s + s/2, ended: 14 * s, outcome: "completed"}), nil, 1, 0, 0},
		{"watcher after expiry; the claim's statement started just before", hist(
			attemptRow{attempt: 1, claimed: 10 * s, ended: 12*s + 7000, outcome: "lease_expired"},
			attemptRow{attempt: 2, claimed: 12*s + 1000, ended: 14 * s, outcome: "completed"}), nil, 0, 0, 1},
		{"retried, then claimed again at once", hist(
			attemptRow{attempt: 1, claimed: 10 * s, ended: 10*s + 5, outcome: "retried"},
			attemptRow{attempt: 2, claimed: 10*s + 6, ended: 11 * s, outcome: "completed"}), nil, 0, 0, 0},
		{"claimed during a lease that never ended", hist(
			attemptRow{attempt: 1, claimed: 10 * s},
			attemptRow{attempt: 2, claimed: 11 * s, ended: 12 * s, outcome: "completed"}), nil, 1, 0, 0},
	}
	for _, c := range cases {
		res := overlaps(c.f, c.renewals, ttl)
		if len(res.jobs) != c.overlaps || res.evidenced != c.evidenced || res.inversions != c.inversions || res.pairs != 1 {
			t.Errorf("%s: %d overlaps, %d evidenced, %d inversions, %d pairs; want %d, %d, %d, 1 (%v)", c.name,
				len(res.jobs), res.evidenced, res.inversions, res.pairs, c.overlaps, c.evidenced, c.inversions, res.examples)
		}
	}
}
