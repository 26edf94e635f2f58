package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestEnqueueUniqueScope: with --unique-while-unfinished a key is held
// while its job is pending and free once it was cancelled; with
// --unique-window the same key in a window is another key; a window that
// is no whole number of microseconds is refused.
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
		r := lh(t, db, "enqueue", "leasehold.sleep", "--unique-key", "k", "--unique-window", "1500ns")
		if r.code == 0 || !strings.Contains(r.stderr, "unique_window") {
			t.Errorf("enqueue with a 1500ns window: %s\nwant a refusal naming unique_window", r)
		}
	})
}
