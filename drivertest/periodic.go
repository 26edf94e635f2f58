package drivertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// slotJob returns the insert params of the job of slot n of a schedule,
// with the slot in its args and no unique key: only the schedule's row
// can keep a second job of the slot out.
func slotJob(n int) *driver.InsertParams {
	p := job("q", "tick")
	p.Args = fmt.Appendf(nil, `{"slot":%d}`, n)
	return p
}

// slotClaim returns the params that claim slot n (n seconds after base)
// of schedule name.
func slotClaim(name string, base time.Time, n int) *driver.PeriodicInsertParams {
	return &driver.PeriodicInsertParams{
		Name: name, Spec: "@every 1s",
		Slot: base.Add(time.Duration(n) * time.Second), Next: base.Add(time.Duration(n+1) * time.Second),
		Job: slotJob(n),
	}
}

// testPeriodicSlotRace checks that of many goroutines, on two drivers,
// each trying the same slots in order as processes of one schedule do,
// exactly one wins each slot and inserts exactly one job for it.
func testPeriodicSlotRace(c *tc) {
	const slots, racers = 6, 12
	d2 := c.second()
	base := c.now().Truncate(time.Second)
	var (
		mu     sync.Mutex
		claims = map[int]int{}
		wg     sync.WaitGroup
		start  = make(chan struct{})
	)
	for i := range racers {
		d := c.d
		if i%2 == 1 {
			d = d2
		}
		wg.Go(func() {
			<-start
			for n := range slots {
				res, err := d.PeriodicInsert(c.ctx, slotClaim("race", base, n))
				if err != nil {
					c.Errorf("racer %d, slot %d: PeriodicInsert: %v", i, n, err)
					return
				}
				if res.Claimed {
					mu.Lock()
					claims[n]++
					mu.Unlock()
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for n := range slots {
		c.eq(fmt.Sprintf("claims of slot %d", n), claims[n], 1)
	}
	jobs := c.list(&leasehold.ListParams{Kind: "tick"})
	seen := map[int]int{}
	for _, j := range jobs {
		seen[argSlot(c, j)]++
	}
	c.eq("jobs inserted", len(jobs), slots)
	for n := range slots {
		c.eq(fmt.Sprintf("jobs of slot %d", n), seen[n], 1)
	}
	row := c.periodicRow("race")
	c.sameTime("last slot", row.LastSlot, base.Add((slots-1)*time.Second))
	c.sameTime("next slot", row.NextSlot, base.Add(slots*time.Second))
	c.eq("last job's slot", argSlot(c, c.get(row.LastJobID)), slots-1)
}

// testPeriodicEarlierSlotRefused checks that a slot at or before the
// schedule's last slot is refused without inserting, and that the
// refusal finds the slot's job by its unique key.
func testPeriodicEarlierSlotRefused(c *tc) {
	base := c.now().Truncate(time.Second)
	p := slotClaim("s", base, 5)
	p.Job.UniqueKey = "periodic:s:5"
	res, err := c.d.PeriodicInsert(c.ctx, p)
	if err != nil || !res.Claimed || res.Job == nil || res.Job.Duplicate {
		c.Fatalf("first claim of slot 5 = %+v, %v; want claimed with a new job", res, err)
	}
	won := res.Job.Job
	again := slotClaim("s", base, 5)
	again.Job.UniqueKey = p.Job.UniqueKey
	res, err = c.d.PeriodicInsert(c.ctx, again)
	if err != nil || res.Claimed || res.Job == nil || !res.Job.Duplicate || res.Job.Job.ID != won.ID {
		c.Fatalf("second claim of slot 5 = %+v, %v; want refused, with job %d as duplicate", res, err, won.ID)
	}
	res, err = c.d.PeriodicInsert(c.ctx, slotClaim("s", base, 4))
	if err != nil || res.Claimed || res.Job != nil {
		c.Fatalf("claim of earlier slot 4 = %+v, %v; want refused, no job", res, err)
	}
	c.eq("jobs", len(c.list(&leasehold.ListParams{Kind: "tick"})), 1)
	row := c.periodicRow("s")
	c.sameTime("last slot", row.LastSlot, base.Add(5*time.Second))
	c.eq("last job", row.LastJobID, won.ID)
	c.eq("kind and queue", row.Kind+" "+row.Queue, "tick q")
}

// testPeriodicInsertFailure checks that a slot whose job cannot be
// inserted (its UUID is another job's) is not claimed and inserts
// nothing, and that the error wraps the insert's, names the schedule and
// names the driver once ("sqlitedriver: periodic insert s: sqlitedriver:
// insert: ..." said it twice).
func testPeriodicInsertFailure(c *tc) {
	c.insert(withUUID(job("q", "k")))
	base := c.now().Truncate(time.Second)
	p := slotClaim("charges", base, 0)
	withUUID(p.Job)
	_, err := c.d.PeriodicInsert(c.ctx, p)
	if !errors.Is(err, leasehold.ErrInvalidArgs) {
		c.Fatalf("PeriodicInsert of a job with a taken UUID = %v, want ErrInvalidArgs", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "schedule charges") || strings.Count(msg, "driver: ") != 1 {
		c.Errorf("error %q: want the schedule named, and the driver once", msg)
	}
	c.eq("jobs of the slot", len(c.list(&leasehold.ListParams{Kind: "tick"})), 0)
	rows, err := c.d.PeriodicList(c.ctx)
	if err != nil {
		c.Fatalf("PeriodicList: %v", err)
	}
	for _, r := range rows {
		if r.Name == "charges" && !r.LastSlot.IsZero() {
			c.Errorf("schedule charges claimed slot %v with no job inserted", r.LastSlot)
		}
	}
}

// testPeriodicRegister checks that registering records a schedule
// without a slot, with its grace, updates it without touching the last
// slot, that a slot claim records the grace it names, and that list and
// delete see it.
func testPeriodicRegister(c *tc) {
	base := c.now().Truncate(time.Second)
	reg := &driver.PeriodicRegisterParams{Name: "b", Spec: "@hourly", Kind: "k", Queue: "q", Next: base.Add(time.Hour),
		Grace: 90 * time.Minute}
	row, err := c.d.PeriodicRegister(c.ctx, reg)
	if err != nil {
		c.Fatalf("PeriodicRegister: %v", err)
	}
	c.zeroTime("last slot of a new schedule", row.LastSlot)
	c.sameTime("next slot", row.NextSlot, base.Add(time.Hour))
	c.eq("grace recorded", row.Grace, 90*time.Minute)
	claim := slotClaim("b", base, 0)
	claim.Grace = 2 * time.Hour
	if _, err := c.d.PeriodicInsert(c.ctx, claim); err != nil {
		c.Fatalf("PeriodicInsert: %v", err)
	}
	c.eq("grace recorded by a slot claim", c.periodicRow("b").Grace, 2*time.Hour)
	if _, err := c.d.PeriodicRegister(c.ctx, &driver.PeriodicRegisterParams{Name: "a", Spec: "@daily", Kind: "k", Queue: "q"}); err != nil {
		c.Fatalf("PeriodicRegister: %v", err)
	}
	reg.Spec = "0 * * * *"
	if row, err = c.d.PeriodicRegister(c.ctx, reg); err != nil {
		c.Fatalf("PeriodicRegister again: %v", err)
	}
	c.eq("spec after registering again", row.Spec, "0 * * * *")
	c.sameTime("last slot kept by registering again", row.LastSlot, base)
	rows, err := c.d.PeriodicList(c.ctx)
	if err != nil {
		c.Fatalf("PeriodicList: %v", err)
	}
	if len(rows) != 2 || rows[0].Name != "a" || rows[1].Name != "b" {
		c.Fatalf("PeriodicList = %d rows, want a then b", len(rows))
	}
	c.zeroTime("next slot of a schedule that never fires", rows[0].NextSlot)
	c.eq("grace of a schedule registered without one", rows[0].Grace, time.Duration(0))
	c.eq("grace after registering again", rows[1].Grace, 90*time.Minute)
	for _, want := range []bool{true, false} {
		if ok, err := c.d.PeriodicDelete(c.ctx, "a"); err != nil || ok != want {
			c.Fatalf("PeriodicDelete = %v, %v; want %v", ok, err, want)
		}
	}
	if rows, _ = c.d.PeriodicList(c.ctx); len(rows) != 1 {
		c.Fatalf("PeriodicList after delete = %d rows, want 1", len(rows))
	}
}

// argSlot returns the slot in a job's args (see slotJob).
func argSlot(c *tc, j *leasehold.JobRow) int {
	c.Helper()
	var a struct{ Slot int }
	if err := json.Unmarshal(j.Args, &a); err != nil {
		c.Fatalf("job %d args %s: %v", j.ID, j.Args, err)
	}
	return a.Slot
}

// periodicRow returns schedule name's row, or fails the test.
func (c *tc) periodicRow(name string) *leasehold.PeriodicRow {
	c.Helper()
	rows, err := c.d.PeriodicList(c.ctx)
	if err != nil {
		c.Fatalf("PeriodicList: %v", err)
	}
	for _, r := range rows {
		if r.Name == name {
			return r
		}
	}
	c.Fatalf("schedule %s not recorded", name)
	return nil
}
