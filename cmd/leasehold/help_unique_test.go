package main

import (
	"strings"
	"testing"
)

// TestHelpUniqueKeyScopes: the help of enqueue says that a key held under
// another scope does not block a plain --unique-key insert, and the
// help of jobs delete and purge that a deleted job no longer holds its
// key; the commands behave as their help says.
func TestHelpUniqueKeyScopes(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"enqueue", "--help"}, "A job that holds the key under another scope or window does not block the insert: the key then names several jobs."},
			{[]string{"enqueue", "--help"}, "with --unique-key alone, a job inserted with that key and neither --unique-while-unfinished nor --unique-window holds it in every state until it is deleted or purged"},
			{[]string{"jobs", "delete", "--help"}, "A deleted job no longer holds its unique key (enqueue --unique-key): an enqueue with that key adds a new job."},
			{[]string{"purge", "--help"}, "A deleted job no longer holds its unique key (enqueue --unique-key): an enqueue with that key adds a new job."},
		} {
			help := strings.Join(strings.Fields(ok(t, db, c.args...)), " ")
			if !strings.Contains(help, c.want) {
				t.Errorf("leasehold %s: want %q in:\n%s", strings.Join(c.args, " "), c.want, help)
			}
		}

		const kind = "leasehold.demo.charge"
		unfinished := enqueueID(t, db, kind, "--unique-key", "p-42", "--unique-while-unfinished")
		plain := enqueueID(t, db, kind, "--unique-key", "p-42")
		windowed := enqueueID(t, db, kind, "--unique-key", "p-42", "--unique-window", "24h")
		if plain == unfinished || windowed == plain || windowed == unfinished {
			t.Errorf("one key under three scopes: jobs %d, %d, %d; want three jobs", unfinished, plain, windowed)
		}
		if again := enqueueID(t, db, kind, "--unique-key", "p-42"); again != plain {
			t.Errorf("a second plain --unique-key insert added job %d, want job %d returned", again, plain)
		}
		ok(t, db, "jobs", "cancel", itoa(plain))
		ok(t, db, "jobs", "delete", itoa(plain))
		if after := enqueueID(t, db, kind, "--unique-key", "p-42"); after == plain || after == unfinished || after == windowed {
			t.Errorf("after job %d was deleted, a plain --unique-key insert returned job %d, want a new job", plain, after)
		}
	})
}
