package hosts

import "testing"

// TestCheckCatchesEachFault starts from a clean step and breaks one
// figure at a time: each must fail the check and be named.
func TestCheckCatchesEachFault(t *testing.T) {
	good := Check{Inserted: 100, Jobs: 100, Completed: 100, ExactlyOnce: 100, HandlerRuns: 100, Claims: 100}
	if !good.OK() || len(good.Problems()) != 0 || good.Lost() != 0 || good.Twice() != 0 {
		t.Fatalf("a clean step fails: %v", good.Problems())
	}
	cases := map[string]func(*Check){
		"row gone":            func(c *Check) { c.Jobs, c.Completed, c.ExactlyOnce = 99, 99, 99 },
		"job left pending":    func(c *Check) { c.Completed, c.ExactlyOnce = 99, 99 },
		"completed twice":     func(c *Check) { c.ExactlyOnce, c.DoneTwice, c.Retaken = 99, 1, 1 },
		"claimed twice":       func(c *Check) { c.ExactlyOnce, c.Retaken = 99, 1 },
		"handler ran twice":   func(c *Check) { c.HandlerRuns = 101 },
		"claim not recorded":  func(c *Check) { c.Claims = 101 },
		"worker unreported":   func(c *Check) { c.Unreported = 1 },
		"handler runs missed": func(c *Check) { c.HandlerRuns = 99 },
	}
	for name, breakIt := range cases {
		c := good
		breakIt(&c)
		if c.OK() || len(c.Problems()) == 0 {
			t.Errorf("%s: the check passes: %+v", name, c)
		}
	}
	twice := good
	twice.HandlerRuns = 103
	if twice.Twice() != 3 {
		t.Errorf("Twice() = %d with 3 extra handler runs, want 3", twice.Twice())
	}
}
