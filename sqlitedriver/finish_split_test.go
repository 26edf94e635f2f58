package sqlitedriver

import (
	"slices"
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestSplitUniform: the leases of one owner and one transition form a
// group once there are minGroup of them; smaller groups stay in the rest,
// in batch order; a fence named twice counts once, as its first entry.
func TestSplitUniform(t *testing.T) {
	done := transition(leasehold.OutcomeCompleted, "")
	var ps []*driver.FinishParams
	add := func(id int64, owner string, tr driver.Transition) {
		ps = append(ps, &driver.FinishParams{ID: id, Owner: owner, Attempt: 1, Transition: tr})
	}
	add(1, "a", transition(leasehold.OutcomeFailed, "declined"))
	for id := int64(2); id < 2+minGroup; id++ {
		add(id, "a", done)
	}
	add(1, "a", done)   // the same fence again: its first entry stands
	add(100, "b", done) // another owner: a group of one
	add(101, "a", transition(leasehold.OutcomeFailed, "declined"))
	groups, rest := splitUniform(ps)
	if len(groups) != 1 || len(groups[0]) != minGroup || groups[0][0].ID != 2 {
		t.Fatalf("groups = %v, want one of jobs 2-%d", groups, 1+minGroup)
	}
	var restIDs []int64
	for _, p := range rest {
		restIDs = append(restIDs, p.ID)
	}
	if want := []int64{1, 100, 101}; !slices.Equal(restIDs, want) {
		t.Errorf("rest = %v, want %v", restIDs, want)
	}
	if groups, _ := splitUniform(ps[:minGroup]); len(groups) != 0 {
		t.Errorf("with %d completions: %d groups, want none", minGroup-1, len(groups))
	}
}
