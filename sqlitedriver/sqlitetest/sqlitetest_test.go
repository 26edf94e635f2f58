package sqlitetest_test

import (
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

type pingArgs struct{}

func (pingArgs) Kind() string { return "ping" }

// TestOpen is how a program's own test gets a leasehold database: a client
// on sqlitetest.Open inserts and reads back a job with no other setup, and
// each call gets an empty database of its own.
func TestOpen(t *testing.T) {
	for range 2 {
		client, err := leasehold.NewClient(leasehold.Config{Driver: sqlitetest.Open(t)})
		if err != nil {
			t.Fatalf("NewClient: %v", err)
		}
		res, err := client.Insert(t.Context(), pingArgs{}, nil)
		if err != nil {
			t.Fatalf("Insert: %v", err)
		}
		if res.Job.ID != 1 || res.Job.State != leasehold.StatePending {
			t.Errorf("first job of a fresh database: id %d, state %s; want 1, pending", res.Job.ID, res.Job.State)
		}
	}
}
