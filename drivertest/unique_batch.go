package drivertest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// keyedJob returns insert params of kind in queue "q" with key and args
// {"n": i}, of one of three scopes by i: a plain key, the unfinished
// scope, or a one-hour window.
func keyedJob(kind, key string, i int) *driver.InsertParams {
	p := job("q", kind)
	p.UniqueKey = key
	switch i % 3 {
	case 1:
		p.UniqueWhileUnfinished = true
	case 2:
		p.UniqueWindow = time.Hour
	}
	p.Args = fmt.Appendf(nil, `{"n":%d}`, i)
	return p
}

// batchRaceRounds and batchRaceKeys size testUniqueBatchRace: on
// PostgreSQL without a common order of keys, about one round in four
// deadlocks. Where a transaction holds every write (RowLocks false), the
// batches cannot interleave, and a few rounds (batchRaceLockedRounds) do:
// each waits out the other's write lock.
const batchRaceRounds, batchRaceLockedRounds, batchRaceKeys = 25, 3, 60

// testUniqueBatchRace races, on two drivers, two batches with the same
// unique keys (of every scope) in opposite orders, through Insert and
// through InsertBulk, round after round. Both calls succeed and each key
// is inserted once: racing inserts add exactly one job, also when each
// batch would otherwise hold a key the other waits for while waiting for
// one the other holds (a deadlock, on PostgreSQL).
func testUniqueBatchRace(c *tc) {
	d2 := c.second()
	c.Run("Insert", func(t *testing.T) {
		c := c.with(t)
		c.raceBatches(d2, "ins", func(d driver.Driver, batch []*driver.InsertParams) (int, error) {
			res, err := d.Insert(c.ctx, nil, batch)
			fresh := 0
			for _, r := range res {
				if !r.Duplicate {
					fresh++
				}
			}
			return fresh, err
		})
	})
	c.Run("InsertBulk", func(t *testing.T) {
		c := c.with(t)
		c.raceBatches(d2, "bulk", func(d driver.Driver, batch []*driver.InsertParams) (int, error) {
			n, err := d.InsertBulk(c.ctx, batch)
			return int(n), err
		})
	})
}

// raceBatches runs the rounds of testUniqueBatchRace with call, which
// inserts a batch and returns how many jobs it added, on c.d and d2, and
// checks that each round added each key once.
func (c *tc) raceBatches(d2 driver.Driver, kind string, call func(driver.Driver, []*driver.InsertParams) (int, error)) {
	c.Helper()
	rounds := batchRaceRounds
	if !c.h.RowLocks {
		rounds = batchRaceLockedRounds
	}
	for round := range rounds {
		var forward, backward []*driver.InsertParams
		for i := range batchRaceKeys {
			j := batchRaceKeys - 1 - i
			forward = append(forward, keyedJob(kind, fmt.Sprintf("r%d-%d", round, i), i))
			backward = append(backward, keyedJob(kind, fmt.Sprintf("r%d-%d", round, j), j))
		}
		var (
			wg    sync.WaitGroup
			added [2]int
			errs  [2]error
			start = make(chan struct{})
		)
		for i, d := range []driver.Driver{c.d, d2} {
			batch := [][]*driver.InsertParams{forward, backward}[i]
			wg.Go(func() {
				<-start
				added[i], errs[i] = call(d, batch)
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				c.Fatalf("round %d: batch %d of two with the same %d keys in opposite orders: %v",
					round, i, batchRaceKeys, err)
			}
		}
		if added[0]+added[1] != batchRaceKeys {
			c.Fatalf("round %d: the batches added %d and %d jobs, want %d in all (each key once)",
				round, added[0], added[1], batchRaceKeys)
		}
	}
	stored := c.list(&leasehold.ListParams{Kind: kind, Limit: rounds * batchRaceKeys * 2})
	c.eq("jobs stored", len(stored), rounds*batchRaceKeys)
}

// testUniqueBatchIDOrder checks a keyed batch whose keys are not in
// order, with jobs without a key between them and a key twice: the first
// job of each key is inserted, the later one is its duplicate, and the
// ids follow the batch (ids are the last key of claim order), through
// Insert, Insert in a caller's transaction, and InsertBulk.
func testUniqueBatchIDOrder(c *tc) {
	batch := func(prefix string) []*driver.InsertParams {
		var ps []*driver.InsertParams
		for i, key := range []string{"m", "", "z", "a", "", "z", "b"} {
			if key == "" {
				p := job("q", "k")
				p.Args = fmt.Appendf(nil, `{"n":%d}`, i)
				ps = append(ps, p)
				continue
			}
			ps = append(ps, keyedJob("k", prefix+key, i))
		}
		// The second "z" has the scope of the first, so that it conflicts.
		ps[5].UniqueWhileUnfinished, ps[5].UniqueWindow = ps[2].UniqueWhileUnfinished, ps[2].UniqueWindow
		return ps
	}
	wantArgs := []int{0, 1, 2, 3, 4, 6} // the batch without the second "z"
	check := func(what string, res []*leasehold.InsertResult) {
		c.Helper()
		if len(res) != 7 {
			c.Fatalf("%s: %d results, want 7", what, len(res))
		}
		c.isDuplicateOf(what+": the second job of key z", res[5], res[2].Job)
		var got []*leasehold.JobRow
		for i, r := range res {
			if i != 5 {
				c.isNew(fmt.Sprintf("%s: job %d", what, i), r)
				got = append(got, r.Job)
			}
		}
		c.inBatchOrder(what, got, wantArgs)
	}

	res, err := c.d.Insert(c.ctx, nil, batch("ins-"))
	if err != nil {
		c.Fatalf("Insert: %v", err)
	}
	check("Insert", res)
	c.inBatchOrder("Insert, as stored", c.listFrom(res[0].Job.ID-1, 6), wantArgs)

	for _, k := range c.h.TxKinds {
		tx, commit, _ := k.Begin(c.T, c.d)
		res, err := c.d.Insert(c.ctx, tx, batch("tx-"+k.Name+"-"))
		if err != nil {
			c.Fatalf("Insert in a %s: %v", k.Name, err)
		}
		if err := commit(); err != nil {
			c.Fatalf("commit %s: %v", k.Name, err)
		}
		check("Insert in a "+k.Name, res)
	}

	last := c.list(&leasehold.ListParams{Desc: true, Limit: 1})[0].ID
	if n, err := c.d.InsertBulk(c.ctx, batch("bulk-")); err != nil || n != 6 {
		c.Fatalf("InsertBulk = %d, %v; want 6 (the second z skipped)", n, err)
	}
	c.inBatchOrder("InsertBulk, as stored", c.listFrom(last, 6), wantArgs)
}

// listFrom lists up to n jobs with an id above after, in id order.
func (c *tc) listFrom(after int64, n int) []*leasehold.JobRow {
	c.Helper()
	return c.list(&leasehold.ListParams{AfterID: after, Limit: n})
}

// inBatchOrder checks that jobs, in id order, have args {"n": want[i]}.
func (c *tc) inBatchOrder(what string, jobs []*leasehold.JobRow, want []int) {
	c.Helper()
	var got []int
	for i, j := range jobs {
		if i > 0 && j.ID <= jobs[i-1].ID {
			c.Errorf("%s: job %d has id %d, after id %d", what, i, j.ID, jobs[i-1].ID)
		}
		var a struct{ N int }
		if err := json.Unmarshal(j.Args, &a); err != nil {
			c.Fatalf("%s: args %s: %v", what, j.Args, err)
		}
		got = append(got, a.N)
	}
	c.eq(what+": the jobs' args n in id order", fmt.Sprint(got), fmt.Sprint(want))
}

// windowBatchRounds is how many batches testUniqueWindowBatchClock
// inserts: with a 1 ms window, a window ends inside most of them.
const windowBatchRounds = 200

// testUniqueWindowBatchClock inserts, batch after batch, one key with a
// window of 1 ms twice: the first job is inserted, the second is always
// its duplicate, also when the window ends during the call (a batch
// reads one clock for its jobs' windows).
func testUniqueWindowBatchClock(c *tc) {
	for i := range windowBatchRounds {
		p := job("q", "k")
		p.UniqueKey, p.UniqueWindow = fmt.Sprintf("w%d", i), time.Millisecond
		q := *p
		res, err := c.d.Insert(c.ctx, nil, []*driver.InsertParams{p, &q})
		if err != nil || len(res) != 2 {
			c.Fatalf("batch %d: Insert of a windowed key twice = %v, %v", i, res, err)
		}
		c.isNew(fmt.Sprintf("batch %d, first job", i), res[0])
		if !res[1].Duplicate || res[1].Job.ID != res[0].Job.ID {
			c.Fatalf("batch %d: the second job of key %q is job %d (duplicate %v), want a duplicate of job %d",
				i, p.UniqueKey, res[1].Job.ID, res[1].Duplicate, res[0].Job.ID)
		}
	}
}
