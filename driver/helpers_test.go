package driver

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/leasehold/leasehold/leasetype"
)

func TestUniform(t *testing.T) {
	done := Transition{State: leasetype.StateCompleted, KeepRunAt: true, KeepLastError: true, Finished: true,
		Outcome: leasetype.OutcomeCompleted}
	other := done
	other.AttemptError = "x"
	p := func(owner string, t Transition) *FinishParams {
		return &FinishParams{ID: 1, Owner: owner, Attempt: 1, Transition: t}
	}
	cases := []struct {
		ps   []*FinishParams
		want bool
	}{
		{[]*FinishParams{p("w", done)}, true},
		{[]*FinishParams{p("w", done), p("w", done)}, true},
		{[]*FinishParams{p("w", done), p("v", done)}, false},
		{[]*FinishParams{p("w", done), p("w", other)}, false},
	}
	for i, c := range cases {
		if got := Uniform(c.ps); got != c.want {
			t.Errorf("case %d: Uniform = %v, want %v", i, got, c.want)
		}
	}
}

// TestUniformGroups: one group per owner and transition, in the order of
// each group's first lease, each in batch order.
func TestUniformGroups(t *testing.T) {
	done := Transition{State: leasetype.StateCompleted, KeepRunAt: true, KeepLastError: true, Finished: true,
		Outcome: leasetype.OutcomeCompleted}
	other := done
	other.AttemptError = "x"
	p := func(id int64, owner string, t Transition) *FinishParams {
		return &FinishParams{ID: id, Owner: owner, Attempt: 1, Transition: t}
	}
	ps := []*FinishParams{p(1, "w", other), p(2, "w", done), p(3, "v", done), p(4, "w", done), p(5, "w", other)}
	var got [][]int64
	for _, g := range UniformGroups(ps) {
		var ids []int64
		for _, q := range g {
			ids = append(ids, q.ID)
		}
		got = append(got, ids)
	}
	want := [][]int64{{1, 5}, {2, 4}, {3}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("UniformGroups = %v, want %v", got, want)
	}
	if g := UniformGroups(nil); len(g) != 0 {
		t.Errorf("UniformGroups(nil) = %v, want none", g)
	}
}

func TestRescueWritesAndRescued(t *testing.T) {
	jobs := []*leasetype.JobRow{
		{ID: 9, Queue: "q", Kind: "k", Attempt: 2, LeaseOwner: "a"},
		{ID: 4, Queue: "r", Kind: "k", Attempt: 1, LeaseOwner: "b"},
		{ID: 6, Queue: "q", Kind: "k", Attempt: 1, LeaseOwner: "a"},
	}
	decide := func(j *leasetype.JobRow) Transition {
		s := leasetype.StatePending
		if j.Queue == "r" {
			s = leasetype.StateStuck
		}
		return Transition{State: s, KeepRunAt: true, LastError: "e", Outcome: leasetype.OutcomeLeaseExpired}
	}
	ps, err := RescueWrites(jobs, decide)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		if p.ID != jobs[i].ID || p.Owner != jobs[i].LeaseOwner || p.Attempt != jobs[i].Attempt || p.Transition != decide(jobs[i]) {
			t.Errorf("write %d = %+v, want the fence and transition of job %+v", i, p, jobs[i])
		}
	}
	got := Rescued(jobs, ps, []FinishResult{{ID: 9}, {ID: 4}, {ID: 6, Cancelled: true}})
	want := []*leasetype.RescuedJob{
		{ID: 4, Queue: "r", Kind: "k", Attempt: 1, Owner: "b", NewState: leasetype.StateStuck},
		{ID: 6, Queue: "q", Kind: "k", Attempt: 1, Owner: "a", NewState: leasetype.StateCancelled},
		{ID: 9, Queue: "q", Kind: "k", Attempt: 2, Owner: "a", NewState: leasetype.StatePending},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Rescued = %+v, want %+v", got, want)
	}
	if _, err := RescueWrites(jobs, func(*leasetype.JobRow) Transition { return Transition{} }); err == nil {
		t.Error("RescueWrites accepted an invalid transition")
	}
}

func TestRescueLimit(t *testing.T) {
	decide := func(*leasetype.JobRow) Transition { return Transition{} }
	for _, c := range []struct{ limit, want int }{{0, DefaultRescueLimit}, {-1, DefaultRescueLimit}, {7, 7}} {
		if got, err := RescueLimit(&RescueParams{Decide: decide, Limit: c.limit}); err != nil || got != c.want {
			t.Errorf("RescueLimit(Limit %d) = %d, %v; want %d", c.limit, got, err, c.want)
		}
	}
	if _, err := RescueLimit(&RescueParams{Limit: 5}); err == nil {
		t.Error("RescueLimit accepted params without Decide")
	}
}
