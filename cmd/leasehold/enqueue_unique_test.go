package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// TestEnqueueUniqueScope: with --unique-while-unfinished a key is held
// while its job is pending and free once it was cancelled; with
// --unique-window (a duration in days too) the same key in a window is
// another key; a window shorter than a millisecond is refused.
func TestEnqueueUniqueScope(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		scoped := []string{"leasehold.sleep", "--unique-key", "k", "--unique-while-unfinished"}
		id := enqueueID(t, db, scoped...)
		if out := ok(t, db, append([]string{"enqueue"}, scoped...)...); !strings.Contains(out, "nothing enqueued") {
			t.Errorf("second enqueue while the job is pending said %q, want \"nothing enqueued\"", out)
		}
		ok(t, db, "jobs", "cancel", fmt.Sprint(id))
		if again := enqueueID(t, db, scoped...); again == id {
			t.Errorf("enqueue after the job was cancelled returned job %d again, want a new job", id)
		}
		windowed := []string{"leasehold.sleep", "--unique-key", "k", "--unique-window", "24h"}
		first := enqueueID(t, db, windowed...)
		if second := enqueueID(t, db, windowed...); second != first {
			t.Errorf("second enqueue in the window = job %d, want job %d", second, first)
		}
		inDays := []string{"leasehold.sleep", "--unique-key", "d", "--unique-window", "1.5d"}
		if first, second := enqueueID(t, db, inDays...), enqueueID(t, db, inDays...); second != first {
			t.Errorf("second enqueue in a 1.5d window = job %d, want job %d", second, first)
		}
		r := lh(t, db, "enqueue", "leasehold.sleep", "--unique-key", "k", "--unique-window", "1500ns")
		if r.code != 2 || !strings.Contains(r.stderr, "--unique-window 1.5µs is too short") {
			t.Errorf("enqueue with a 1500ns window: %s\nwant a refusal naming --unique-window", r)
		}
	})
}

// TestRetryUniqueKeyHeld: retrying a cancelled job whose unique key a
// newer job holds is refused with exit code 1 in one line that names the
// job, says another job holds its key and what to do, without the
// database's constraint text; with --completed too.
func TestRetryUniqueKeyHeld(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		scoped := []string{"leasehold.sleep", "--unique-key", "k", "--unique-while-unfinished"}
		old := enqueueID(t, db, scoped...)
		ok(t, db, "jobs", "cancel", fmt.Sprint(old))
		enqueueID(t, db, scoped...)
		for _, args := range [][]string{{"jobs", "retry", fmt.Sprint(old)}, {"jobs", "retry", "--completed", fmt.Sprint(old)}} {
			// One line holding all of want is want and nothing else.
			want := fmt.Sprintf("leasehold: job %d: another job holds its unique key now; let that job finish, or cancel it, first\n", old)
			checkOneLineError(t, strings.Join(args, " "), lh(t, db, args...), cli.ExitFailure, want)
		}
		if j := showJob(t, db, old); j.Status != "cancelled" {
			t.Errorf("job %d is %s after the refused retries, want cancelled", old, j.Status)
		}
	})
}
