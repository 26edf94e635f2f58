package sqlitedriver

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestClaimReadsAfterCommit: a Driver from Open claims on its writer and
// reads the claimed jobs on its reader connections; one from New has
// none and claims in one transaction. Both return the same jobs.
func TestClaimReadsAfterCommit(t *testing.T) {
	d := openTest(t)
	if d.reader == nil {
		t.Fatal("a Driver from Open has no reader connections")
	}
	insert(t, d, job(`{"n":1}`), job(`{"n":2}`))
	got := claim(t, d, "w", 5, time.Minute, true)
	if len(got) != 2 || string(got[0].Args) != `{"n":1}` || string(got[1].Args) != `{"n":2}` ||
		got[0].Attempt != 1 || got[0].LeaseOwner != "w" || got[0].State != leasehold.StateProcessing {
		t.Fatalf("claimed %+v", got)
	}
}

// TestReadClaimedSkipsLostLeases: the read after the claim's commit
// returns only the leases the claimer still holds, at the attempt it
// claimed.
func TestReadClaimedSkipsLostLeases(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	insert(t, d, job(`{}`), job(`{}`), job(`{}`))
	jobs := claim(t, d, "w", 3, time.Minute, true)
	if len(jobs) != 3 {
		t.Fatalf("claimed %d jobs, want 3", len(jobs))
	}
	// The second lease is taken over by another worker.
	if _, err := d.DB().ExecContext(ctx, `UPDATE leasehold_jobs SET lease_owner = 'other', attempt = attempt + 1 WHERE id = ?`, jobs[1].ID); err != nil {
		t.Fatal(err)
	}
	set := string(appendLeaseSet(nil, [][2]int64{{jobs[0].ID, 1}, {jobs[1].ID, 1}, {jobs[2].ID, 2}}))
	got, err := d.readClaimed(ctx, set, claimed{queue: "q", owner: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != jobs[0].ID {
		t.Fatalf("read %v, want only job %d (the other lease is lost, the third asks for an attempt not claimed)", ids(got), jobs[0].ID)
	}
}

// TestClaimReleasesLeasesItCannotRead: when the read after the commit
// fails, the claim returns the error and its leases are released at once
// (pending, not charged to the retry budget) instead of expiring unseen.
func TestClaimReleasesLeasesItCannotRead(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	inserted := insert(t, d, job(`{}`), job(`{}`))
	reader := d.reader
	broken, err := sql.Open("sqlite", DSN(filepath.Join(t.TempDir(), "missing", "x.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer broken.Close()
	d.reader = broken
	_, err = d.Claim(ctx, &driver.ClaimParams{Queue: "q", Kinds: []string{"k"}, Owner: "w", TTL: time.Hour, Limit: 5, TakeOver: true})
	d.reader = reader
	if err == nil {
		t.Fatal("Claim with a reader that cannot read: nil error")
	}
	for _, j := range inserted {
		got := mustGet(t, d, j.ID)
		if got.State != leasehold.StatePending || got.LeaseOwner != "" || got.Attempt-got.FreeAttempts != 0 {
			t.Errorf("job %d after the failed read: state %s, owner %q, attempt %d, free %d; want pending, unowned, uncharged",
				j.ID, got.State, got.LeaseOwner, got.Attempt, got.FreeAttempts)
		}
	}
	if again := claim(t, d, "w2", 5, time.Minute, true); len(again) != 2 {
		t.Errorf("claimed %d jobs after the release, want 2", len(again))
	}
}

// TestNewWithReaderReadsOnTheReader: a Driver from NewWithReader reads
// the claimed jobs on the caller's reader, after the commit: with that
// reader closed, the claim fails and releases its leases; with it open,
// it returns the jobs.
func TestNewWithReaderReadsOnTheReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	seed := openPath(t, path) // migrated; closed when t ends
	insert(t, seed, job(`{"n":1}`))
	db, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	reader, err := sql.Open("sqlite", ReaderDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewWithReader(testCtx(t), db, reader)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := reader.Close(); err != nil {
		t.Fatal(err)
	}
	p := &driver.ClaimParams{Queue: "q", Kinds: []string{"k"}, Owner: "w", TTL: time.Hour, Limit: 5, TakeOver: true}
	if _, err := d.Claim(testCtx(t), p); err == nil {
		t.Fatal("Claim with the caller's reader closed: nil error (the jobs were not read on it)")
	}
	reader, err = sql.Open("sqlite", ReaderDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if d, err = NewWithReader(testCtx(t), db, reader); err != nil {
		t.Fatal(err)
	}
	got, err := d.Claim(testCtx(t), p)
	if err != nil || len(got) != 1 || string(got[0].Args) != `{"n":1}` || got[0].State != leasehold.StateProcessing {
		t.Fatalf("Claim after the release: %+v, %v; want the job, processing", got, err)
	}
}
