package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
	"github.com/leasehold/leasehold/view"
)

func TestWorkUntilIdle(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		var ids []int64
		for i := 1; i <= 3; i++ {
			ids = append(ids, enqueueID(t, db, "leasehold.demo.charge", "--args",
				fmt.Sprintf(`{"payment_id":"p-%d","amount_cents":%d}`, i, 100*i)))
		}
		ids = append(ids, enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"10ms"}`))
		failing := enqueueID(t, db, "leasehold.sleep", "--args", `{"fail":"boom"}`, "--max-attempts", "1")
		other := enqueueID(t, db, "email.send") // no worker for this kind: left alone
		var stats view.StatsView
		okJSON(t, db, &stats, "work", "--until-idle", "--poll-interval", "50ms", "--log-level", "error")
		if stats.Completed != 4 || stats.Failed != 1 {
			t.Errorf("worker stats = %+v, want 4 completed, 1 failed", stats)
		}
		checkList(t, db, ids, "--status", "completed")
		if j := showJob(t, db, failing); j.Status != "failed" || j.LastError != "boom" {
			t.Errorf("failing job = %+v", j.JobView)
		}
		if j := showJob(t, db, other); j.Status != "pending" {
			t.Errorf("job of an unknown kind = %+v, want it left pending", j.JobView)
		}
		j := showJob(t, db, ids[0])
		if len(j.Attempts) != 1 || j.Attempts[0].Outcome != "completed" || j.Attempts[0].EndedAt == nil {
			t.Errorf("attempts of a completed payment = %+v", j.Attempts)
		}
		out := ok(t, db, "jobs", "show", fmt.Sprint(ids[0]))
		for _, want := range []string{"ATTEMPT", "OWNER", "completed", "finished"} {
			if !strings.Contains(out, want) {
				t.Errorf("jobs show lacks %q:\n%s", want, out)
			}
		}
		checkRetryCompleted(t, db, ids[0])
	})
}

// checkRetryCompleted checks that `jobs retry` refuses completed job id
// (exit 1, pointing at --completed, the job left completed), and that
// `jobs retry --completed` makes it pending.
func checkRetryCompleted(t *testing.T, db string, id int64) {
	t.Helper()
	r := lh(t, db, "jobs", "retry", fmt.Sprint(id))
	if r.code != cli.ExitFailure || !strings.Contains(r.stderr, "runs its handler again") || !strings.Contains(r.stderr, "--completed") {
		t.Errorf("retrying a completed payment without --completed: %s", r)
	}
	if j := showJob(t, db, id); j.Status != "completed" {
		t.Errorf("after the refused retry the job is %s, want completed", j.Status)
	}
	var retried view.JobView
	okJSON(t, db, &retried, "jobs", "retry", "--completed", fmt.Sprint(id))
	if retried.Status != "pending" {
		t.Errorf("jobs retry --completed = %+v, want it pending", retried)
	}
}

// TestWorkReportLines: with --report-every the worker writes its counters
// as fleet report lines while it runs, then a final one, and nothing else
// on stdout: what the demo follows its workers by.
func TestWorkReportLines(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"300ms"}`)
		out := ok(t, db, "work", "--until-idle", "--report-every", "20ms", "--poll-interval", "50ms", "--log-level", "error")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var last fleet.Report
		for i, l := range lines {
			var r fleet.Report
			if err := json.Unmarshal([]byte(l), &r); err != nil || r.Stats == nil {
				t.Fatalf("line %d is not a report (%v): %s", i+1, err, l)
			}
			if want := fleet.TypeReport; i < len(lines)-1 && r.Type != want {
				t.Errorf("line %d has type %q, want %q", i+1, r.Type, want)
			}
			last = r
		}
		if len(lines) < 3 || last.Type != fleet.TypeFinal || last.Stats.Completed != 1 || last.Stats.Owner == "" {
			t.Errorf("%d lines, the last %+v %+v; want reports while the job ran, then the final counters", len(lines), last, last.Stats)
		}
	})
}

// TestLiveLease: a running job shows its lease (owner, time left); it
// cannot be retried; cancelling it stops its handler; a stopped worker
// releases its leases at once.
func TestLiveLease(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		id := enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1m"}`)
		w := start(t, db, "work", "--ttl", "3s", "--poll-interval", "50ms", "--owner", "tw-1",
			"--shutdown-timeout", "100ms", "--json", "--log-level", "error")
		j := waitStatus(t, db, id, "processing")
		if j.Lease == nil || j.Lease.Owner != "tw-1" || j.Lease.LeftSeconds <= 0 || j.Lease.LeftSeconds > 3 {
			t.Fatalf("lease of a running job = %+v", j.Lease)
		}
		out := ok(t, db, "jobs", "show", fmt.Sprint(id))
		if !strings.Contains(out, "held by tw-1") || !strings.Contains(out, "left") {
			t.Errorf("jobs show of a running job:\n%s", out)
		}
		checkList(t, db, []int64{id}, "--owner", "tw-1")
		if r := lh(t, db, "jobs", "retry", fmt.Sprint(id)); r.code != cli.ExitFailure || !strings.Contains(r.stderr, "processing") {
			t.Errorf("retrying a running job: %s", r)
		}
		if out := ok(t, db, "jobs", "cancel", fmt.Sprint(id)); !strings.Contains(out, "cancellation requested") {
			t.Errorf("cancelling a running job said %q", out)
		}
		j = waitStatus(t, db, id, "cancelled")
		if n := len(j.Attempts); n != 1 || j.Attempts[0].Outcome != "cancelled" {
			t.Errorf("attempts of the cancelled job = %+v", j.Attempts)
		}
		second := enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1m"}`)
		waitStatus(t, db, second, "processing")
		if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := w.wait(t); err != nil {
			t.Fatalf("worker stopped by SIGTERM: %v\n%s", err, w.stderr.String())
		}
		var stats view.StatsView
		if err := json.Unmarshal(w.stdout.Bytes(), &stats); err != nil || stats.Cancelled != 1 || stats.Released != 1 {
			t.Errorf("worker stats = %+v, %v; want 1 cancelled, 1 released", stats, err)
		}
		if j := showJob(t, db, second); j.Status != "pending" || j.Attempts[0].Outcome != "released" {
			t.Errorf("job of a stopped worker = %+v %+v, want pending at once, released", j.JobView, j.Attempts)
		}
	})
}

// TestStuckAndWatch: a SIGKILLed worker's leases show in `jobs stuck` once
// they expire; `watch` returns them to their queue or flags them stuck.
func TestStuckAndWatch(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		ids := killedHolding(t, db, "plain", "flagged")
		plain, flagged := ids[0], ids[1]
		waitFor(t, 30*time.Second, "expired leases in jobs stuck", func() bool {
			var jobs []view.JobView
			okJSON(t, db, &jobs, "jobs", "stuck")
			return len(jobs) == 2 && jobs[0].Lease != nil && jobs[0].Lease.Expired
		})
		if out := ok(t, db, "jobs", "stuck"); !strings.Contains(out, "lease of doomed expired") {
			t.Errorf("jobs stuck:\n%s", out)
		}
		watcher := start(t, db, "watch", "--interval", "100ms", "--flag-stuck", "flagged", "--json")
		waitStatus(t, db, plain, "pending")
		waitStatus(t, db, flagged, "stuck")
		if err := watcher.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := watcher.wait(t); err != nil {
			t.Fatalf("watch stopped by SIGTERM: %v\n%s", err, watcher.stderr.String())
		}
		lines := strings.Split(strings.TrimSpace(watcher.stdout.String()), "\n")
		if len(lines) != 2 || !strings.Contains(watcher.stdout.String(), `"status":"stuck"`) {
			t.Errorf("watch --json printed:\n%s", watcher.stdout.String())
		}
		// The last attempt is the one the watcher found expired: on a
		// loaded machine an earlier 1 s lease may have gone unrenewed,
		// been given up by its worker and the job claimed again.
		if j := showJob(t, db, plain); j.Attempts[len(j.Attempts)-1].Outcome != "lease_expired" {
			t.Errorf("attempts of a rescued job = %+v", j.Attempts)
		}
		if out := ok(t, db, "jobs", "stuck"); !strings.Contains(out, "flagged stuck") {
			t.Errorf("jobs stuck after the watcher:\n%s", out)
		}
		if out := ok(t, db, "watch", "--once"); !strings.Contains(out, "no expired leases") {
			t.Errorf("watch --once with nothing to do said %q", out)
		}
		ok(t, db, "jobs", "retry", fmt.Sprint(flagged))
		if out := ok(t, db, "jobs", "stuck"); !strings.Contains(out, "no stuck jobs") {
			t.Errorf("jobs stuck after retry:\n%s", out)
		}
	})
}

// killedHolding enqueues a one-minute job in each of queues and starts a
// worker, owner "doomed", with a 1 s lease and no watcher, that claims
// them all; once they are processing it is killed with SIGKILL, so their
// leases expire with no one to release them. It returns the jobs' ids in
// the order of queues.
func killedHolding(t *testing.T, db string, queues ...string) []int64 {
	t.Helper()
	var ids []int64
	for _, q := range queues {
		ids = append(ids, enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1m"}`, "--queue", q))
	}
	w := start(t, db, "work", "--queue", strings.Join(queues, ","), "--ttl", "1s", "--no-watcher",
		"--poll-interval", "50ms", "--owner", "doomed", "--log-level", "error")
	for _, id := range ids {
		waitStatus(t, db, id, "processing")
	}
	if err := w.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = w.wait(t)
	return ids
}

// waitStatus waits until job id has status and returns it.
func waitStatus(t *testing.T, db string, id int64, status string) view.JobInfoView {
	t.Helper()
	var j view.JobInfoView
	waitFor(t, 30*time.Second, fmt.Sprintf("job %d to be %s", id, status), func() bool {
		j = showJob(t, db, id)
		return j.Status == status
	})
	return j
}

// TestWatchReconcile: `watch --reconcile QUEUE=INTO` sends a dead
// worker's expired lease to reconciling with one reconcile job in INTO,
// and refuses a policy the client refuses; jobs delete leaves the
// reconciling job alone and jobs cancel cancels it at once.
func TestWatchReconcile(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		id := killedHolding(t, db, "pay")[0]
		waitFor(t, 30*time.Second, "the expired lease in jobs stuck", func() bool {
			var jobs []view.JobView
			okJSON(t, db, &jobs, "jobs", "stuck")
			return len(jobs) == 1 && jobs[0].Lease != nil && jobs[0].Lease.Expired
		})
		ok(t, db, "watch", "--once", "--reconcile", "pay=rec")
		// The last attempt is the one that expired: on a loaded machine the
		// 1 s lease of an earlier claim may have been released unstarted
		// (past its safe window) and the job claimed again.
		if j := showJob(t, db, id); j.Status != "reconciling" || j.Attempts[len(j.Attempts)-1].Outcome != "lease_expired" {
			t.Errorf("job after watch --reconcile = %+v %+v, want reconciling, lease_expired", j.JobView, j.Attempts)
		}
		var recs []view.JobView
		okJSON(t, db, &recs, "jobs", "list", "--queue", "rec")
		if len(recs) != 1 || recs[0].Kind != "leasehold.reconcile" || recs[0].Status != "pending" {
			t.Errorf("reconcile jobs = %+v, want one pending leasehold.reconcile", recs)
		}
		// As jobs delete --help and jobs cancel --help say of a reconciling job.
		if r := lh(t, db, "jobs", "delete", fmt.Sprint(id)); r.code != 1 || !strings.Contains(r.stderr, "cancel it first") {
			t.Errorf("jobs delete of a reconciling job: %s; want exit 1, cancel it first", r)
		}
		if out := ok(t, db, "jobs", "cancel", fmt.Sprint(id)); !strings.Contains(out, fmt.Sprintf("job %d cancelled", id)) {
			t.Errorf("jobs cancel of a reconciling job printed %q, want it cancelled at once", out)
		}
		if r := lh(t, db, "watch", "--once", "--reconcile", "pay=pay"); r.code != 2 {
			t.Errorf("watch --reconcile pay=pay: %s; want a usage error", r)
		}
	})
}

// TestWorkUntilIdleWaitsForReconcileJobs: with --reconcile-into, a
// worker told to stop once idle waits for the reconcile jobs of its
// reconcile queue too, not only for its own queues' jobs: this one is not
// due for a second, and runs (its job is gone: nothing to heal) before
// the worker stops.
func TestWorkUntilIdleWaitsForReconcileJobs(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		rec := enqueueID(t, db, "leasehold.reconcile", "--queue", "rec", "--run-at", "1s",
			"--args", `{"job_id":999999,"attempt":1,"job_kind":"leasehold.demo.charge","job_queue":"default"}`)
		ok(t, db, "work", "--until-idle", "--reconcile-into", "rec", "--poll-interval", "50ms", "--log-level", "error")
		if j := showJob(t, db, rec); j.Status != "completed" {
			t.Errorf("reconcile job %d when the worker stopped: %s, want completed", rec, j.Status)
		}
	})
}
