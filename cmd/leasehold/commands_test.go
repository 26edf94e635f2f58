package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/view"
)

func TestEnqueueListShow(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		id := enqueueID(t, db, "leasehold.demo.charge", "--args", `{"payment_id":"p-1","amount_cents":1200}`,
			"--queue", "payments", "--priority", "5", "--run-at", "1h", "--max-attempts", "7",
			"--unique-key", "p-1", "--metadata", `{"shop":"north"}`)
		var dup struct {
			ID        int64 `json:"id"`
			Duplicate bool  `json:"duplicate"`
		}
		okJSON(t, db, &dup, "enqueue", "leasehold.demo.charge", "--unique-key", "p-1", "--queue", "payments")
		if !dup.Duplicate || dup.ID != id {
			t.Fatalf("second enqueue with the same unique key = %+v, want duplicate of %d", dup, id)
		}
		if out := ok(t, db, "enqueue", "leasehold.demo.charge", "--unique-key", "p-1"); !strings.Contains(out, "nothing enqueued") {
			t.Errorf("duplicate enqueue said %q", out)
		}
		j := showJob(t, db, id)
		if j.Queue != "payments" || j.Priority != 5 || j.MaxAttempts != 7 || j.UniqueKey != "p-1" || j.Status != "pending" {
			t.Errorf("jobs show = %+v", j.JobView)
		}
		var meta map[string]string
		if err := json.Unmarshal(j.Metadata, &meta); err != nil || meta["shop"] != "north" {
			t.Errorf("metadata = %s, %v", j.Metadata, err)
		}
		if d := j.RunAt.Sub(j.CreatedAt); d < 59*60e9 || d > 61*60e9 {
			t.Errorf("run_at - created_at = %v, want about 1h", d)
		}
		other := enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1s"}`, "--run-at", "2030-01-02T15:04:05Z")
		checkList(t, db, []int64{id}, "--status", "pending", "--queue", "payments")
		checkList(t, db, []int64{other}, "--kind", "leasehold.sleep")
		checkList(t, db, []int64{id, other}, "--status", "pending,stuck")
		checkList(t, db, nil, "--status", "completed")
		checkList(t, db, []int64{other}, "--after", fmt.Sprint(id))
		text := ok(t, db, "jobs", "list")
		for _, want := range []string{"ID", "KIND", "leasehold.demo.charge", "leasehold.sleep", "in 1h"} {
			if !strings.Contains(text, want) {
				t.Errorf("jobs list output lacks %q:\n%s", want, text)
			}
		}
		show := ok(t, db, "jobs", "show", fmt.Sprint(id))
		for _, want := range []string{fmt.Sprintf("job %d", id), "payments", "unique key", "no attempts yet"} {
			if !strings.Contains(show, want) {
				t.Errorf("jobs show output lacks %q:\n%s", want, show)
			}
		}
	})
}

// checkList runs `jobs list` with flags and compares the ids.
func checkList(t *testing.T, db string, want []int64, flags ...string) {
	t.Helper()
	var jobs []view.JobView
	okJSON(t, db, &jobs, append([]string{"jobs", "list"}, flags...)...)
	got := make([]int64, len(jobs))
	for i, j := range jobs {
		got[i] = j.ID
	}
	if fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
		t.Errorf("jobs list %v = %v, want %v", flags, got, want)
	}
}

func TestQueuesRetryCancelPurge(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		a := enqueueID(t, db, "leasehold.sleep", "--queue", "q1")
		b := enqueueID(t, db, "leasehold.sleep", "--queue", "q1")
		enqueueID(t, db, "leasehold.sleep", "--queue", "q2", "--run-at", "10m")
		var qs []view.QueueView
		okJSON(t, db, &qs, "queues")
		if len(qs) != 2 || qs[0].Queue != "q1" || qs[0].Counts["pending"] != 2 || qs[1].Counts["pending"] != 1 {
			t.Fatalf("queues = %+v", qs)
		}
		if out := ok(t, db, "queues"); !strings.Contains(out, "OLDEST PENDING") || !strings.Contains(out, "q2") {
			t.Errorf("queues output:\n%s", out)
		}
		if out := ok(t, db, "jobs", "cancel", fmt.Sprint(a)); !strings.Contains(out, "cancelled") {
			t.Errorf("jobs cancel said %q", out)
		}
		if r := lh(t, db, "jobs", "cancel", fmt.Sprint(a)); r.code != cli.ExitFailure || !strings.Contains(r.stderr, "already cancelled") {
			t.Errorf("cancelling a cancelled job: %s", r)
		}
		var retried view.JobView
		okJSON(t, db, &retried, "jobs", "retry", fmt.Sprint(a))
		if retried.Status != "pending" {
			t.Errorf("jobs retry = %+v", retried)
		}
		ok(t, db, "jobs", "cancel", fmt.Sprint(b))
		if r := lh(t, db, "jobs", "delete", fmt.Sprint(a)); r.code != cli.ExitFailure || !strings.Contains(r.stderr, "has not finished") {
			t.Errorf("deleting a pending job: %s", r)
		}
		if out := ok(t, db, "jobs", "delete", fmt.Sprint(b)); !strings.Contains(out, "deleted") {
			t.Errorf("jobs delete said %q", out)
		}
		if r := lh(t, db, "jobs", "show", fmt.Sprint(b)); r.code != cli.ExitNotFound {
			t.Errorf("jobs show of a deleted job: %s", r)
		}
		b = enqueueID(t, db, "leasehold.sleep", "--queue", "q1", "--args", `{"duration":"1ms","note":"Needle"}`)
		var found []view.JobView
		okJSON(t, db, &found, "jobs", "list", "--search", "needle")
		if len(found) != 1 || found[0].ID != b {
			t.Errorf("jobs list --search needle = %+v, want job %d alone", found, b)
		}
		ok(t, db, "jobs", "cancel", fmt.Sprint(b))
		var purged struct {
			Purged int64 `json:"purged"`
		}
		okJSON(t, db, &purged, "purge", "--older-than", "7d")
		if purged.Purged != 0 {
			t.Errorf("purge --older-than 7d deleted %d jobs, want 0", purged.Purged)
		}
		out := ok(t, db, "purge", "--older-than", "0s")
		if !strings.Contains(out, "purged 1 finished job") {
			t.Errorf("purge --older-than 0s said %q, want 1 purged", out)
		}
		if r := lh(t, db, "jobs", "show", fmt.Sprint(b)); r.code != cli.ExitNotFound {
			t.Errorf("purged job still shown: %s", r)
		}
		showJob(t, db, a)
	})
}

// TestDatabaseSelection: --db wins over LEASEHOLD_DATABASE_URL, which wins
// over ./leasehold.db.
func TestDatabaseSelection(t *testing.T) {
	dir := t.TempDir()
	if r := runIn(t, dir, nil, "migrate"); r.code != 0 || !strings.Contains(r.stdout, "sqlite:leasehold.db") {
		t.Fatalf("migrate on the default database: %s", r)
	}
	if _, err := os.Stat(filepath.Join(dir, cli.DefaultPath)); err != nil {
		t.Fatalf("default database not created: %v", err)
	}
	runIn(t, dir, nil, "enqueue", "leasehold.sleep")
	envDB := filepath.Join(dir, "env.db")
	env := []string{cli.EnvDatabaseURL + "=sqlite:" + envDB}
	if r := runIn(t, dir, env, "migrate"); r.code != 0 || !strings.Contains(r.stdout, envDB) {
		t.Fatalf("migrate with %s: %s", env[0], r)
	}
	r := runIn(t, dir, env, "--json", "jobs", "list")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("jobs list on the env database = %s, want no jobs", r)
	}
	r = runIn(t, dir, env, "--db", "leasehold.db", "--json", "jobs", "list")
	if r.code != 0 || !strings.Contains(r.stdout, `"leasehold.sleep"`) {
		t.Errorf("jobs list with --db overriding the env = %s", r)
	}
}
