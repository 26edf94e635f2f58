package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/view"
)

// TestShowAndListTellTheTruth: the lease line and the attempt row show the
// same last heartbeat; a cancelled job does not say its cancel is still
// pending; jobs list labels the budget column for what it counts and
// shows when finished jobs finished rather than when they were due; the
// stop summary counts cancelled jobs.
func TestShowAndListTellTheTruth(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		id := enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1m"}`)
		w := start(t, db, "work", "--ttl", "1500ms", "--poll-interval", "50ms", "--owner", "tt-1",
			"--shutdown-timeout", "100ms", "--log-level", "error")
		var j view.JobInfoView
		waitFor(t, 30*time.Second, "a heartbeat of the running job", func() bool {
			j = showJob(t, db, id)
			return j.Lease != nil && j.Lease.HeartbeatAt != nil
		})
		if a := j.Attempts[len(j.Attempts)-1]; a.HeartbeatAt == nil || a.Outcome != "running" {
			t.Errorf("--json: running attempt %+v has no heartbeat, lease heartbeat %v", a, j.Lease.HeartbeatAt)
		}
		checkSameHeartbeat(t, ok(t, db, "jobs", "show", fmt.Sprint(id)))

		ok(t, db, "jobs", "cancel", fmt.Sprint(id))
		waitStatus(t, db, id, "cancelled")
		if out := ok(t, db, "jobs", "show", fmt.Sprint(id)); strings.Contains(out, "next heartbeat") {
			t.Errorf("jobs show of a cancelled job says its cancel is pending:\n%s", out)
		}

		second := enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1m"}`)
		waitStatus(t, db, second, "processing")
		if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := w.wait(t); err != nil {
			t.Fatalf("worker stopped by SIGTERM: %v\n%s", err, w.stderr.String())
		}
		if out := w.stdout.String(); !strings.Contains(out, "cancelled 1,") || !strings.Contains(out, "released 1,") {
			t.Errorf("stop summary lacks the cancelled or released job:\n%s", out)
		}
		list := ok(t, db, "jobs", "list")
		header, rows := listRows(t, list)
		if !strings.Contains(header, "CLAIMS") || !strings.Contains(header, "CHARGED/MAX") {
			t.Errorf("jobs list header %q does not say what its attempt columns count", header)
		}
		if r := rows[id]; !strings.Contains(r, "finished ") || strings.Contains(r, "due") {
			t.Errorf("jobs list row of a finished job says when it was due, not when it finished: %q", r)
		}
		if f := strings.Fields(rows[second]); len(f) < 6 || f[4] != "1" || f[5] != "0/20" {
			t.Errorf("jobs list row of a released job = %q, want 1 claim and 0/20 charged", rows[second])
		}
	})
}

var (
	leaseHeartbeat = regexp.MustCompile(`last heartbeat (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z)`)
	timestampRE    = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z`)
)

// checkSameHeartbeat checks that the lease line of `jobs show` and the
// running attempt's row show the same last heartbeat, in the same format.
func checkSameHeartbeat(t *testing.T, show string) {
	t.Helper()
	m := leaseHeartbeat.FindStringSubmatch(show)
	if m == nil {
		t.Errorf("jobs show: no timestamped last heartbeat in the lease line:\n%s", show)
		return
	}
	for _, line := range strings.Split(show, "\n") {
		if strings.Contains(line, "running") && !strings.Contains(line, "lease") {
			if ts := timestampRE.FindAllString(line, -1); len(ts) < 2 || ts[1] != m[1] {
				t.Errorf("jobs show: attempt row %q shows heartbeat %v, lease line %s", line, ts, m[1])
			}
			return
		}
	}
	t.Errorf("jobs show: no running attempt row:\n%s", show)
}

// listRows splits `jobs list` output into its header and rows by job id.
func listRows(t *testing.T, out string) (string, map[int64]string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	rows := map[int64]string{}
	for _, l := range lines[1:] {
		var id int64
		if _, err := fmt.Sscan(l, &id); err == nil {
			rows[id] = l
		}
	}
	return lines[0], rows
}

// TestWorkSummaryAndKinds: the summary counts snoozed, cancelled and
// panicked jobs; --kind leasehold.sleep does not create the payments ledger; the
// payment kind creates it once and says so.
func TestWorkSummaryAndKinds(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		enqueueID(t, db, "leasehold.sleep", "--args", `{"snooze":"10ms"}`)
		enqueueID(t, db, "leasehold.sleep", "--args", `{"cancel":"not needed"}`)
		enqueueID(t, db, "leasehold.sleep", "--args", `{"panic":"boom"}`, "--max-attempts", "1")
		r := lh(t, db, "work", "--kind", "leasehold.sleep", "--until-idle", "--poll-interval", "50ms")
		if r.code != 0 {
			t.Fatalf("work --kind leasehold.sleep: %s", r)
		}
		for _, want := range []string{"snoozed 1,", "cancelled 1,", "panicked 1,", "completed 1,", "failed 1,"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("work summary lacks %q:\n%s", want, r.stdout)
			}
		}
		if strings.Contains(r.stderr, "ledger") {
			t.Errorf("work --kind leasehold.sleep mentions the payments ledger:\n%s", r.stderr)
		}
		if ledgerExists(t, db) {
			t.Errorf("work --kind leasehold.sleep created the payments ledger table")
		}
		enqueueID(t, db, "leasehold.demo.charge", "--args", `{"payment_id":"p-1","amount_cents":100}`)
		r = lh(t, db, "work", "--until-idle", "--poll-interval", "50ms")
		if r.code != 0 || !strings.Contains(r.stderr, "created payments ledger table payments_ledger") {
			t.Errorf("work with the payment kind does not say it created the ledger: %s", r)
		}
		if !ledgerExists(t, db) {
			t.Errorf("work with the payment kind did not create the payments ledger table")
		}
		r = lh(t, db, "work", "--until-idle", "--poll-interval", "50ms")
		if r.code != 0 || strings.Contains(r.stderr, "created payments ledger") {
			t.Errorf("work says it created an existing ledger table: %s", r)
		}
		if r := lh(t, db, "work", "--kind", "email.send"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "not a built-in job kind") {
			t.Errorf("work --kind email.send: %s", r)
		}
	})
}

// TestWorkLeavesApplicationKinds: the kinds built into `leasehold work`
// are named in the project's namespace, so work run on an application's
// database leaves the application's payment.charge, sleep and
// payment.heal jobs alone (it once claimed and failed them), and its help
// says it never runs them.
func TestWorkLeavesApplicationKinds(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		app := []int64{
			enqueueID(t, db, "payment.charge", "--args", `{"order":"o-1"}`),
			enqueueID(t, db, "sleep", "--args", `{"duration":"forever"}`),
			enqueueID(t, db, "payment.heal", "--queue", "rec", "--args", `{"order":"o-1"}`),
		}
		own := enqueueID(t, db, "leasehold.sleep")
		r := lh(t, db, "work", "--reconcile-into", "rec", "--until-idle", "--poll-interval", "50ms")
		if r.code != 0 {
			t.Fatalf("work: %s", r)
		}
		for _, id := range app {
			if j := showJob(t, db, id); j.Status != "pending" || j.Attempt != 0 {
				t.Errorf("application job %d (%s) is %s after %d attempts, want pending and never claimed", id, j.Kind, j.Status, j.Attempt)
			}
		}
		if j := showJob(t, db, own); j.Status != "completed" {
			t.Errorf("built-in job %d is %s, want completed", own, j.Status)
		}
	})
	help := strings.Join(strings.Fields(ok(t, "sqlite:"+t.TempDir()+"/lh.db", "work", "--help")), " ")
	if !strings.Contains(help, "built into this binary, and only those") || !strings.Contains(help, "An application's own kinds are never run") {
		t.Errorf("work --help does not say it runs only its built-in kinds:\n%s", help)
	}
}

// ledgerExists reports whether db has the payments ledger table.
func ledgerExists(t *testing.T, db string) bool {
	t.Helper()
	s, err := openDB(t, db).SQL()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	return s.QueryRow("SELECT count(*) FROM payments_ledger").Scan(&n) == nil
}

// TestListPaging: jobs list says when more jobs match and how to page,
// and lists newest first with --newest.
func TestListPaging(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		var ids []int64
		for range 5 {
			ids = append(ids, enqueueID(t, db, "leasehold.sleep"))
		}
		out := ok(t, db, "jobs", "list", "--limit", "2")
		if want := fmt.Sprintf("--after %d", ids[1]); !strings.Contains(out, want) {
			t.Errorf("jobs list --limit 2 of 5 jobs does not say %q:\n%s", want, out)
		}
		if out := ok(t, db, "jobs", "list", "--limit", "5"); strings.Contains(out, "more jobs") {
			t.Errorf("jobs list of every job says more match:\n%s", out)
		}
		checkList(t, db, []int64{ids[4], ids[3]}, "--newest", "--limit", "2")
		checkList(t, db, []int64{ids[2], ids[1]}, "--newest", "--limit", "2", "--before", fmt.Sprint(ids[3]))
		out = ok(t, db, "jobs", "list", "--newest", "--limit", "2")
		if want := fmt.Sprintf("--before %d", ids[3]); !strings.Contains(out, want) {
			t.Errorf("jobs list --newest --limit 2 does not say %q:\n%s", want, out)
		}
		if r := lh(t, db, "--json", "jobs", "list", "--limit", "3"); r.code != 0 || !strings.Contains(r.stderr, fmt.Sprintf("--after %d", ids[2])) {
			t.Errorf("jobs list --json --limit 3 does not say on stderr that more match: %s", r)
		}
	})
}

// TestWatchSaysItWatches: watch says when it starts, and periodically
// that it is still watching while nothing expires.
func TestWatchSaysItWatches(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		w := start(t, db, "watch", "--interval", "50ms", "--status-every", "200ms")
		waitFor(t, 30*time.Second, "watch's idle line", func() bool {
			return strings.Contains(w.stdout.String(), "nothing expired")
		})
		if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := w.wait(t); err != nil {
			t.Fatalf("watch stopped by SIGTERM: %v\n%s", err, w.stderr.String())
		}
		out := w.stdout.String()
		if !strings.Contains(out, "for expired leases") {
			t.Errorf("watch does not say it started:\n%s", out)
		}
		if !strings.Contains(out, "watching: 0 rescued so far, nothing expired") {
			t.Errorf("watch's idle line:\n%s", out)
		}
	})
}

// TestVersion: --version prints the version and exits 0.
func TestVersion(t *testing.T) {
	r := runIn(t, "", nil, "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "leasehold version ") || !strings.Contains(r.stdout, "go1") {
		t.Errorf("leasehold --version: %s", r)
	}
}

// TestArgsFromFileAndStdin: --args @FILE and --args - carry payloads too
// long for a command line.
func TestArgsFromFileAndStdin(t *testing.T) {
	pad := strings.Repeat("x", 300_000) // above the kernel's 128 KiB cap on one argument
	payload := fmt.Sprintf(`{"duration":"0s","pad":%q}`, pad)
	file := filepath.Join(t.TempDir(), "args.json")
	if err := os.WriteFile(file, []byte(payload+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	forEachDB(t, func(t *testing.T, db string) {
		fromFile := enqueueID(t, db, "leasehold.sleep", "--args", "@"+file)
		r := runStdin(t, payload, "--db", db, "--json", "enqueue", "leasehold.sleep", "--args", "-", "--metadata", `{"from":"stdin"}`)
		if r.code != 0 {
			t.Fatalf("enqueue --args -: %s", r)
		}
		var out struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.ID == 0 {
			t.Fatalf("enqueue --args - printed %q: %v", r.stdout[:min(len(r.stdout), 200)], err)
		}
		for _, id := range []int64{fromFile, out.ID} {
			if j := showJob(t, db, id); !bytes.Contains(j.Args, []byte(pad)) {
				t.Errorf("job %d args have %d bytes, want the %d-byte payload", id, len(j.Args), len(payload))
			}
		}
		missing := lh(t, db, "enqueue", "leasehold.sleep", "--args", "@"+file+".missing")
		checkOneLineError(t, "--args @missing", missing, cli.ExitUsage, "cannot read")
	})
}

// runStdin runs the binary with stdin as its standard input.
func runStdin(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := command(ctx, "", nil, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run leasehold %v: %v", args, err)
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// TestQueuesPointAtUnclaimedKinds: a kind no worker handles is pointed
// out by queues once its jobs wait unclaimed past --unclaimed-after.
func TestQueuesPointAtUnclaimedKinds(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		enqueueID(t, db, "email.send")
		enqueueID(t, db, "email.send", "--run-at", "1h")
		out := ok(t, db, "queues", "--unclaimed-after", "0s")
		if !strings.Contains(out, "kind email.send in queue default: 1 due job never claimed") ||
			!strings.Contains(out, "is a worker for it running?") {
			t.Errorf("queues does not point at the unclaimed kind:\n%s", out)
		}
		if out := ok(t, db, "jobs", "stuck", "--unclaimed-after", "0s"); !strings.Contains(out, "no stuck jobs") ||
			!strings.Contains(out, "kind email.send in queue default: 1 due job never claimed") {
			t.Errorf("jobs stuck does not point at the unclaimed kind:\n%s", out)
		}
		if out := ok(t, db, "queues"); strings.Contains(out, "never claimed") {
			t.Errorf("queues points at a job due for less than a minute:\n%s", out)
		}
		var qs []view.QueueView
		okJSON(t, db, &qs, "queues", "--unclaimed-after", "0s")
		if len(qs) != 1 || len(qs[0].NeverClaimed) != 1 || !qs[0].NeverClaimed[0].Suspect || qs[0].NeverClaimed[0].Due != 1 {
			t.Errorf("queues --json never_claimed = %+v", qs)
		}
	})
}
