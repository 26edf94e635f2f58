package drivertest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// unfinishedJob returns insert params of kind "k" in queue "q" whose key
// is held only while the job is unfinished.
func unfinishedJob(key string) *driver.InsertParams {
	p := job("q", "k")
	p.UniqueKey, p.UniqueWhileUnfinished = key, true
	return p
}

// insertOne inserts p and returns its one result.
func (c *tc) insertOne(d driver.Driver, p *driver.InsertParams) *leasehold.InsertResult {
	c.Helper()
	res, err := d.Insert(c.ctx, nil, []*driver.InsertParams{p})
	if err != nil || len(res) != 1 || res[0].Job == nil {
		c.Fatalf("Insert of key %q = %v, %v; want one result", p.UniqueKey, res, err)
	}
	return res[0]
}

// isDuplicateOf checks that r is a duplicate whose job is holder.
func (c *tc) isDuplicateOf(what string, r *leasehold.InsertResult, holder *leasehold.JobRow) {
	c.Helper()
	if !r.Duplicate || r.Job.ID != holder.ID {
		c.Errorf("%s: job %d duplicate %v, want a duplicate of job %d", what, r.Job.ID, r.Duplicate, holder.ID)
	}
}

// isNew checks that r is a new job, none of not.
func (c *tc) isNew(what string, r *leasehold.InsertResult, not ...*leasehold.JobRow) {
	c.Helper()
	if r.Duplicate {
		c.Errorf("%s: duplicate of job %d (%s), want a new job", what, r.Job.ID, r.Job.State)
	}
	for _, j := range not {
		if r.Job.ID == j.ID {
			c.Errorf("%s: got job %d again, want a new job", what, j.ID)
		}
	}
}

// testUniqueWhileUnfinished checks the unfinished scope: a pending,
// processing or stuck job holds its key (the duplicate is that job); a
// completed, failed or cancelled one does not, and the next insert adds
// a job, which holds the key in turn. Plain keys and scoped ones of the
// same kind and key are apart.
func testUniqueWhileUnfinished(c *tc) {
	first := c.insertOne(c.d, unfinishedJob("u")).Job
	c.isNew("first insert", &leasehold.InsertResult{Job: first})
	c.eq("stored key", first.UniqueKey, "u")
	c.isDuplicateOf("pending job holds the key", c.insertOne(c.d, unfinishedJob("u")), first)
	claimed := c.claimID(c.d, first.ID, "w", liveTTL, false)
	c.isDuplicateOf("processing job holds the key", c.insertOne(c.d, unfinishedJob("u")), first)

	c.finish(&driver.FinishParams{ID: claimed.ID, Owner: claimed.LeaseOwner, Attempt: claimed.Attempt,
		Transition: driver.Transition{State: leasehold.StateStuck, KeepRunAt: true, Outcome: leasehold.OutcomeLeaseExpired}})
	c.eq("state after flagging", c.get(first.ID).State, leasehold.StateStuck)
	c.isDuplicateOf("stuck job holds the key", c.insertOne(c.d, unfinishedJob("u")), first)

	if _, err := c.d.CancelJob(c.ctx, first.ID); err != nil {
		c.Fatalf("CancelJob: %v", err)
	}
	second := c.insertOne(c.d, unfinishedJob("u"))
	c.isNew("after the holder was cancelled", second, first)
	c.isDuplicateOf("the new job holds the key, not the cancelled one", c.insertOne(c.d, unfinishedJob("u")), second.Job)

	c.finish(fin(c.claimID(c.d, second.Job.ID, "w", liveTTL, false), leasehold.OutcomeCompleted))
	third := c.insertOne(c.d, unfinishedJob("u"))
	c.isNew("after the holder completed", third, first, second.Job)

	c.finish(fin(c.claimID(c.d, third.Job.ID, "w", liveTTL, false), leasehold.OutcomeFailed))
	fourth := c.insertOne(c.d, unfinishedJob("u"))
	c.isNew("after the holder failed", fourth, first, second.Job, third.Job)

	plain := job("q", "k")
	plain.UniqueKey = "u"
	c.isNew("a plain key is apart from scoped ones", c.insertOne(c.d, plain), fourth.Job)
	window := unfinishedJob("u")
	window.UniqueWindow = time.Hour
	c.isNew("another window is another key", c.insertOne(c.d, window), fourth.Job)
	c.eq("jobs stored", len(c.list(&leasehold.ListParams{})), 6)
}

// testUniqueScopeRace races inserts of one key from 16 goroutines on two
// drivers, for the unfinished scope and for a plain key: exactly one
// inserts per scope and every other gets that job. Once both jobs have
// completed, a second race adds one job for the unfinished scope and none
// for the plain key.
func testUniqueScopeRace(c *tc) {
	d2 := c.second()
	race := func(round string, want int) map[bool][]*leasehold.InsertResult {
		var (
			mu    sync.Mutex
			got   = map[bool][]*leasehold.InsertResult{}
			wg    sync.WaitGroup
			start = make(chan struct{})
		)
		for i := range 16 {
			d := []driver.Driver{c.d, d2}[i%2]
			unfinished := i%4 < 2
			wg.Go(func() {
				<-start
				p := job("q", "k")
				p.UniqueKey, p.UniqueWhileUnfinished = "race", unfinished
				res, err := d.Insert(c.ctx, nil, []*driver.InsertParams{p})
				if err != nil || len(res) != 1 || res[0].Job == nil {
					c.Errorf("%s: inserter %d: Insert = %v, %v; want one result", round, i, res, err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				got[unfinished] = append(got[unfinished], res[0])
			})
		}
		close(start)
		wg.Wait()
		for _, unfinished := range []bool{true, false} {
			fresh, ids := 0, map[int64]bool{}
			for _, r := range got[unfinished] {
				ids[r.Job.ID] = true
				if !r.Duplicate {
					fresh++
				}
			}
			wantNew := 1
			if !unfinished {
				wantNew = want
			}
			if fresh != wantNew || len(ids) != 1 {
				c.Errorf("%s, unfinished scope %v: %d new jobs, ids %v; want %d new and one id",
					round, unfinished, fresh, keys(ids), wantNew)
			}
		}
		return got
	}
	first := race("first race", 1)
	for _, unfinished := range []bool{true, false} {
		j := first[unfinished][0].Job
		c.finish(fin(c.claimID(c.d, j.ID, "w", liveTTL, false), leasehold.OutcomeCompleted))
	}
	second := race("after both completed", 0)
	if second[true][0].Job.ID == first[true][0].Job.ID {
		c.Errorf("after completion, the unfinished scope got the completed job %d again", first[true][0].Job.ID)
	}
	if j := second[false][0].Job; j.ID != first[false][0].Job.ID || j.State != leasehold.StateCompleted {
		c.Errorf("after completion, the plain key got job %d (%s), want the completed job %d",
			j.ID, j.State, first[false][0].Job.ID)
	}
	c.eq("jobs stored", len(c.list(&leasehold.ListParams{})), 3)
}

// testUniqueChurn inserts one unfinished-scope key from 4 goroutines, on
// two drivers, while another claims and completes every job that holds
// it, so that holders finish between an insert and the read of its
// holder: every insert gets a job (new, or the holder at that moment)
// without error, and at no time do two unfinished jobs hold the key.
func testUniqueChurn(c *tc) {
	d2 := c.second()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		d := []driver.Driver{c.d, d2}[i%2]
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := d.Insert(c.ctx, nil, []*driver.InsertParams{unfinishedJob("churn")})
				if err != nil || len(res) != 1 || res[0].Job == nil {
					c.Errorf("inserter %d: Insert = %v, %v; want one result", i, res, err)
					return
				}
				// Leave SQLite's one writer to the others now and then:
				// its lock is not fair (a writer of the other driver
				// waits in the busy handler's growing sleeps), and four
				// inserters with a millisecond's pause starved the
				// completing goroutine (one completion in 11 s under the
				// race detector); with 5 ms it still got only one in
				// 13 s on a loaded machine.
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	// Churn for two seconds, and on a slow machine until a few holders
	// have completed.
	completed := 0
	start := time.Now()
	for time.Since(start) < 2*time.Second || (completed < 5 && time.Since(start) < waitTimeout) {
		for _, j := range c.claim("q", "w", 10, false) {
			c.finish(fin(j, leasehold.OutcomeCompleted))
			completed++
		}
		live := 0
		for _, j := range c.list(&leasehold.ListParams{Limit: 1000}) {
			if j.State == leasehold.StatePending || j.State == leasehold.StateProcessing {
				live++
			}
		}
		if live > 1 {
			c.Errorf("%d unfinished jobs hold one key", live)
		}
	}
	close(stop)
	wg.Wait()
	if completed < 2 {
		c.Errorf("only %d jobs completed during the churn; the test needs several", completed)
	}
}

// testUniqueWindow checks windows on the database clock: within one
// window the key is held (also within one batch), in the next window it
// is free again, and another window length is another key.
func testUniqueWindow(c *tc) {
	const w = time.Second
	windowed := func() *driver.InsertParams {
		p := job("q", "k")
		p.UniqueKey, p.UniqueWindow = "w", w
		return p
	}
	// Start early in a window, so that the inserts below share it.
	c.waitFor("the start of a window", func() bool { return c.now().Sub(c.now().Truncate(w)) < w/4 })
	start := c.now().Truncate(w)
	res, err := c.d.Insert(c.ctx, nil, []*driver.InsertParams{windowed(), windowed()})
	if err != nil || len(res) != 2 {
		c.Fatalf("Insert of a key twice in one batch = %v, %v", res, err)
	}
	first := res[0].Job
	c.isNew("first of the window", res[0])
	c.isDuplicateOf("same window, same batch", res[1], first)
	c.isDuplicateOf("same window", c.insertOne(c.d, windowed()), first)
	longer := windowed()
	longer.UniqueWindow = time.Hour
	c.isNew("another window length", c.insertOne(c.d, longer), first)
	if c.now().Sub(start) >= w {
		c.Fatalf("the window ended before the test could check it (a slow database?)")
	}
	c.waitPast(start.Add(w))
	next := c.insertOne(c.d, windowed())
	c.isNew("next window", next, first)
	c.isDuplicateOf("next window, again", c.insertOne(c.d, windowed()), next.Job)
}

// testUniqueScopeBulk checks InsertBulk with unfinished-scope keys: a key
// twice in the batch and a key a pending job holds are skipped; once the
// holder completed, the key is inserted again, once.
func testUniqueScopeBulk(c *tc) {
	held := c.insertOne(c.d, unfinishedJob("a")).Job
	batch := []*driver.InsertParams{unfinishedJob("a"), unfinishedJob("b"), unfinishedJob("b"), unfinishedJob("c")}
	if n, err := c.d.InsertBulk(c.ctx, batch); err != nil || n != 2 {
		c.Errorf("InsertBulk of a held key, a key twice and a free key = %d, %v; want 2 (b and c)", n, err)
	}
	c.finish(fin(c.claimID(c.d, held.ID, "w", liveTTL, false), leasehold.OutcomeCompleted))
	if n, err := c.d.InsertBulk(c.ctx, []*driver.InsertParams{unfinishedJob("a"), unfinishedJob("a")}); err != nil || n != 1 {
		c.Errorf("InsertBulk of a key whose holder completed, twice = %d, %v; want 1", n, err)
	}
	res, err := c.d.Insert(c.ctx, nil, []*driver.InsertParams{unfinishedJob("a"), unfinishedJob("d"), unfinishedJob("d")})
	if err != nil || len(res) != 3 {
		c.Fatalf("Insert = %v, %v", res, err)
	}
	if !res[0].Duplicate || res[0].Job.ID == held.ID || res[0].Job.State != leasehold.StatePending {
		c.Errorf("key a after its bulk insert: %+v, want a duplicate of the pending job, not the completed %d", res[0], held.ID)
	}
	c.isNew("key d, first in the batch", res[1])
	c.isDuplicateOf("key d, second in the batch", res[2], res[1].Job)
	c.eq("jobs stored (a twice, b, c, d)", len(c.list(&leasehold.ListParams{})), 5)
}

// CheckUniqueAfterUpgrade checks a driver just migrated from a schema
// older than scoped unique keys, holding a completed job of kind "k" with
// key "done" and a pending one with key "open", both inserted before the
// upgrade: each still holds its key for a plain insert, as before, while
// scoped keys of the same names are apart. A driver's schema upgrade tests
// call it.
func CheckUniqueAfterUpgrade(t testing.TB, d driver.Driver) {
	t.Helper()
	ctx := t.Context()
	insert := func(key string, unfinished bool) *leasehold.InsertResult {
		t.Helper()
		p := job("q", "k")
		p.UniqueKey, p.UniqueWhileUnfinished = key, unfinished
		res, err := d.Insert(ctx, nil, []*driver.InsertParams{p})
		if err != nil || len(res) != 1 || res[0].Job == nil {
			t.Fatalf("Insert of key %q after the upgrade = %v, %v", key, res, err)
		}
		return res[0]
	}
	for _, key := range []string{"done", "open"} {
		r := insert(key, false)
		if !r.Duplicate || r.Job.UniqueKey != key {
			t.Errorf("plain key %q after the upgrade: %+v, want the job from before the upgrade", key, r.Job)
		}
		if r := insert(key, true); r.Duplicate {
			t.Errorf("unfinished-scope key %q after the upgrade: duplicate of job %d, want a new job", key, r.Job.ID)
		}
	}
	if r := insert("done", false); r.Job.State != leasehold.StateCompleted {
		t.Errorf("plain key of the completed job: %s job, want the completed one", r.Job.State)
	}
}

// testRetryJobScopedKeyHeld checks that an operator retry of a finished
// job whose unfinished-scope key a newer job holds is refused with
// ErrUniqueKeyHeld and changes nothing, and succeeds once the newer job
// finished.
func testRetryJobScopedKeyHeld(c *tc) {
	old := c.insertOne(c.d, unfinishedJob("r")).Job
	c.finish(fin(c.claimID(c.d, old.ID, "w", liveTTL, false), leasehold.OutcomeFailed))
	newer := c.insertOne(c.d, unfinishedJob("r"))
	c.isNew("after the first failed", newer, old)
	before := c.snap(old.ID)
	if _, err := c.retry(c.ctx, old.ID); !errors.Is(err, leasehold.ErrUniqueKeyHeld) {
		c.Errorf("RetryJob of a failed job whose key a pending job holds = %v, want ErrUniqueKeyHeld", err)
	}
	c.unchanged("job after the refused retry", before)
	if _, err := c.d.CancelJob(c.ctx, newer.Job.ID); err != nil {
		c.Fatalf("CancelJob: %v", err)
	}
	if j, err := c.retry(c.ctx, old.ID); err != nil || j.State != leasehold.StatePending {
		c.Errorf("RetryJob once the other job was cancelled = %+v, %v; want it pending", j, err)
	}
	c.isDuplicateOf("the retried job holds the key again", c.insertOne(c.d, unfinishedJob("r")), old)
}

// testUniqueScopeInTx checks scoped keys in a caller's transaction, for
// each kind of transaction: a second insert of the key in the same
// transaction is a duplicate of the first, uncommitted, job; rolled back,
// the key is free again.
func testUniqueScopeInTx(c *tc) {
	for _, k := range c.h.TxKinds {
		c.Run(k.Name, func(t *testing.T) {
			c := c.with(t)
			key := "tx-" + k.Name
			tx, _, rollback := k.Begin(c.T, c.d)
			res, err := c.d.Insert(c.ctx, tx, []*driver.InsertParams{unfinishedJob(key)})
			if err != nil || len(res) != 1 || res[0].Duplicate {
				c.Fatalf("first Insert in %s = %v, %v; want a new job", k.Name, res, err)
			}
			again, err := c.d.Insert(c.ctx, tx, []*driver.InsertParams{unfinishedJob(key)})
			if err != nil || len(again) != 1 {
				c.Fatalf("second Insert in %s = %v, %v", k.Name, again, err)
			}
			c.isDuplicateOf("same key in the same transaction", again[0], res[0].Job)
			if err := rollback(); err != nil {
				c.Fatalf("rollback: %v", err)
			}
			c.isNew("after the rollback", c.insertOne(c.d, unfinishedJob(key)))
		})
	}
}
