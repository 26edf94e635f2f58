package main

import (
	"testing"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// TestInputNoDatabaseStores: text and JSON that PostgreSQL cannot store
// (a command line cannot carry a NUL byte, but JSON can escape one) are
// refused the same way on both databases: exit code 2, one line naming the
// flag, no SQL error, nothing enqueued.
func TestInputNoDatabaseStores(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"escaped NUL in args", []string{"enqueue", "leasehold.sleep", "--args", `{"d":"\u0000"}`}, `--args: kind leasehold.sleep: \u0000 (NUL) in a string at byte 6`},
		{"escaped NUL in metadata", []string{"enqueue", "leasehold.sleep", "--metadata", `{"\u0000":1}`}, `--metadata: \u0000 (NUL)`},
		{"invalid UTF-8 in args", []string{"enqueue", "leasehold.sleep", "--args", "{\"d\":\"\xff\"}"}, "--args: kind leasehold.sleep: invalid UTF-8 in a string"},
		{"invalid UTF-8 in unique key", []string{"enqueue", "leasehold.sleep", "--unique-key", "k\xff"}, `--unique-key: "k\xff": invalid UTF-8 at byte 1`},
		{"escape sequence in unique key", []string{"enqueue", "leasehold.sleep", "--unique-key", "k\x1b[31m"}, "--unique-key: \"k\\x1b[31m\": control character U+001B"},
		{"invalid UTF-8 in queue", []string{"enqueue", "leasehold.sleep", "--queue", "q\xff"}, `--queue: "q\xff": invalid UTF-8`},
		{"invalid UTF-8 owner filter", []string{"jobs", "list", "--owner", "w\xff"}, `--owner: "w\xff": invalid UTF-8`},
	}
	forEachDB(t, func(t *testing.T, db string) {
		for _, c := range cases {
			checkOneLineError(t, c.name, lh(t, db, c.args...), cli.ExitUsage, c.want)
		}
		checkList(t, db, nil)
	})
}
