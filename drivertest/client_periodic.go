package drivertest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// periodicTestJob is a periodic job of the "test" kind every interval
// whose jobs carry their slot in their metadata.
func periodicTestJob(name string, s leasehold.Schedule) leasehold.PeriodicJob {
	return leasehold.PeriodicJob{Name: name, Schedule: s, Args: func(slot time.Time) (leasehold.Args, *leasehold.InsertOpts) {
		md := fmt.Appendf(nil, `{"slot":%q}`, slot.UTC().Format(time.RFC3339Nano))
		return testArgs{N: 1}, &leasehold.InsertOpts{Metadata: md}
	}}
}

// slotsOf returns how many jobs of kind "test" each slot has, by their
// metadata.
func (e *clientEnv) slotsOf() map[time.Time]int {
	e.Helper()
	jobs, err := e.d.ListJobs(e.ctx, &leasehold.ListParams{Kind: "test"})
	if err != nil {
		e.Fatalf("ListJobs: %v", err)
	}
	out := map[time.Time]int{}
	for _, j := range jobs {
		var md struct{ Slot time.Time }
		if err := json.Unmarshal(j.Metadata, &md); err != nil || md.Slot.IsZero() {
			e.Fatalf("job %d metadata %s: no slot (%v)", j.ID, j.Metadata, err)
		}
		out[md.Slot]++
	}
	return out
}

// testPeriodicClientsShareSlots runs one schedule in three clients, two
// of them on a second driver as another process would, added while they
// run: every slot from the first to the last gets exactly one job, and
// once every client removed the schedule no job is added.
func testPeriodicClientsShareSlots(e *clientEnv) {
	const every = 200 * time.Millisecond
	d2 := e.h.OpenSecond(e.T, e.d)
	clients := []*leasehold.Client{e.newClient(e.d, nil, nil), e.newClient(d2, nil, nil), e.newClient(d2, nil, nil)}
	for _, c := range clients {
		if err := c.AddPeriodic(periodicTestJob("tick", leasehold.Every(every))); err != nil {
			e.Fatalf("AddPeriodic: %v", err)
		}
	}
	e.waitFor("8 slots", 30*time.Second, func() bool { return len(e.slotsOf()) >= 8 })
	for _, c := range clients {
		if err := c.RemovePeriodic("tick"); err != nil {
			e.Fatalf("RemovePeriodic: %v", err)
		}
	}
	slots := e.slotsOf()
	var times []time.Time
	for s, n := range slots {
		if n != 1 {
			e.Errorf("slot %v has %d jobs, want 1", s, n)
		}
		times = append(times, s)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap != every {
			e.Errorf("slots %v then %v: %v apart, want every slot (%v)", times[i-1], times[i], gap, every)
		}
	}
	rows, err := clients[0].ListPeriodic(e.ctx)
	if err != nil || len(rows) != 1 {
		e.Fatalf("ListPeriodic = %d rows, %v; want 1", len(rows), err)
	}
	r, last := rows[0], times[len(times)-1]
	if r.Spec != "@every 200ms" || r.Kind != "test" || !r.LastSlot.Equal(last) || !r.NextSlot.Equal(last.Add(every)) {
		e.Errorf("schedule row %+v; want spec @every 200ms, kind test, last slot %v and the next one", r, last)
	}
	time.Sleep(3 * every)
	if n := len(e.slotsOf()); n != len(slots) {
		e.Errorf("%d slots after every client removed the schedule, want %d", n, len(slots))
	}
}

// testPeriodicCatchUp checks both policies after downtime: a schedule
// whose last slot is hours old enqueues one job for the latest missed
// slot with CatchUpOne, and none with CatchUpNone.
func testPeriodicCatchUp(e *clientEnv) {
	now, err := e.d.Now(e.ctx)
	if err != nil {
		e.Fatal(err)
	}
	hour := now.UTC().Truncate(time.Hour)
	if early := now.Sub(hour); early < 2*leasehold.MinPeriodicGrace {
		// The current hour's slot must be missed too, past the grace.
		time.Sleep(2*leasehold.MinPeriodicGrace - early)
	}
	for _, name := range []string{"one", "none"} {
		p := &driver.PeriodicInsertParams{Name: name, Spec: "@every 1h", Slot: hour.Add(-3 * time.Hour),
			Job: &driver.InsertParams{Kind: "old", Queue: "default", Args: []byte(`{}`), MaxAttempts: 1}}
		if _, err := e.d.PeriodicInsert(e.ctx, p); err != nil {
			e.Fatalf("PeriodicInsert: %v", err)
		}
	}
	c := e.newClient(e.d, nil, nil)
	for _, p := range []struct {
		name   string
		policy leasehold.CatchUpPolicy
	}{{"one", leasehold.CatchUpOne}, {"none", leasehold.CatchUpNone}} {
		job := periodicTestJob(p.name, leasehold.Every(time.Hour))
		job.CatchUp, job.Grace = p.policy, leasehold.MinPeriodicGrace
		if err := c.AddPeriodic(job); err != nil {
			e.Fatalf("AddPeriodic: %v", err)
		}
	}
	rowOf := func(name string) *leasehold.PeriodicRow {
		rows, err := c.ListPeriodic(e.ctx)
		if err != nil {
			e.Fatalf("ListPeriodic: %v", err)
		}
		for _, r := range rows {
			if r.Name == name {
				return r
			}
		}
		e.Fatalf("schedule %s not recorded", name)
		return nil
	}
	e.waitFor("the catch-up slot", 10*time.Second, func() bool { return rowOf("one").LastSlot.Equal(hour) })
	e.waitFor("the skipping schedule registered", 10*time.Second, func() bool {
		return rowOf("none").NextSlot.Equal(hour.Add(time.Hour))
	})
	time.Sleep(200 * time.Millisecond)
	if slots := e.slotsOf(); len(slots) != 1 || slots[hour] != 1 {
		e.Errorf("jobs by slot %v; want one, for the catch-up slot %v only", slots, hour)
	}
	if r := rowOf("none"); !r.LastSlot.Equal(hour.Add(-3 * time.Hour)) {
		e.Errorf("the skipping schedule's last slot is %v, want it left at %v", r.LastSlot, hour.Add(-3*time.Hour))
	}
}

// hourLattice is a schedule with a slot at at and every hour before and
// after it: the only slot of a test's few seconds is at.
type hourLattice struct{ at time.Time }

// Next returns the first slot after t.
func (h hourLattice) Next(t time.Time) time.Time {
	d := t.Sub(h.at)
	k := d / time.Hour
	if d < 0 && d%time.Hour != 0 {
		k-- // floor
	}
	return h.at.Add((k + 1) * time.Hour)
}

// String names the lattice by its slot.
func (h hourLattice) String() string { return "hourly from " + h.at.UTC().Format(time.RFC3339Nano) }

// testPeriodicCatchUpBeforeFirstSlot checks that a schedule whose row a
// process recorded (registered at its start) but whose first slot no
// process claimed, every process having gone down before it, catches
// that slot up with CatchUpOne when a process comes back: its slots
// start after the row's first registration, not after the new process's
// now. A schedule seen for the first time still catches up nothing from
// before its row existed.
func testPeriodicCatchUpBeforeFirstSlot(e *clientEnv) {
	job := func(name string, s leasehold.Schedule) leasehold.PeriodicJob {
		j := periodicTestJob(name, s)
		j.CatchUp, j.Grace = leasehold.CatchUpOne, leasehold.MinPeriodicGrace
		return j
	}
	rowOf := func(name string) *leasehold.PeriodicRow {
		rows, err := e.d.PeriodicList(e.ctx)
		if err != nil {
			e.Fatalf("PeriodicList: %v", err)
		}
		for _, r := range rows {
			if r.Name == name {
				return r
			}
		}
		return nil
	}
	dbNow := func() time.Time {
		now, err := e.d.Now(e.ctx)
		if err != nil {
			e.Fatalf("Now: %v", err)
		}
		return now
	}
	// A process starts, records the schedule, and goes down before its
	// first slot (a deploy, an outage). On a machine so loaded that it
	// claimed the slot, or recorded the schedule only after it, try again
	// with a later one.
	var (
		name   string
		missed time.Time
	)
	for attempt := 0; ; attempt++ {
		if attempt == 5 {
			e.Fatalf("in 5 attempts, no process recorded the schedule and stopped before its first slot")
		}
		name, missed = fmt.Sprintf("payout-%d", attempt), dbNow().Add(time.Duration(attempt+1)*time.Second).Truncate(time.Millisecond).UTC()
		first := e.newClient(e.d, nil, func(cfg *leasehold.Config) {
			cfg.Periodic = []leasehold.PeriodicJob{job(name, hourLattice{at: missed})}
		})
		e.waitFor("the schedule recorded", 30*time.Second, func() bool { return rowOf(name) != nil })
		stopCtx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
		err := first.Stop(stopCtx)
		cancel()
		if err != nil {
			e.Fatalf("Stop: %v", err)
		}
		if r := rowOf(name); r.LastSlot.IsZero() && r.CreatedAt.Before(missed) {
			break
		}
	}
	// Every process stays down past the slot and its grace.
	e.waitFor("the slot missed", 30*time.Second, func() bool {
		return dbNow().After(missed.Add(leasehold.MinPeriodicGrace + 200*time.Millisecond))
	})
	fresh := missed.Add(time.Millisecond) // missed too, but before its schedule was first seen
	e.newClient(e.d, nil, func(cfg *leasehold.Config) {
		cfg.Periodic = []leasehold.PeriodicJob{job(name, hourLattice{at: missed}), job("fresh", hourLattice{at: fresh})}
	})
	e.waitFor("the missed slot caught up", 30*time.Second, func() bool { return e.slotsOf()[missed] == 1 })
	e.waitFor("the new schedule recorded", 30*time.Second, func() bool { return rowOf("fresh") != nil })
	time.Sleep(300 * time.Millisecond)
	if slots := e.slotsOf(); len(slots) != 1 {
		e.Errorf("jobs by slot %v; want one, for the caught-up slot %v only (none for %v, before schedule fresh was first seen)",
			slots, missed, fresh)
	}
	if r := rowOf(name); !r.LastSlot.Equal(missed) {
		e.Errorf("last slot %v, want the caught-up slot %v", r.LastSlot, missed)
	}
	if r := rowOf("fresh"); !r.LastSlot.IsZero() {
		e.Errorf("schedule fresh claimed slot %v from before it was first seen", r.LastSlot)
	}
}
