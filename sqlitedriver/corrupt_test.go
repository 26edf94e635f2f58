package sqlitedriver

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestCorruptFileIsErrCorrupt: on a file whose pages were overwritten,
// the probe a worker runs while idle, the claim and the operator's reads
// fail with ErrCorrupt and say to restore the file, rather than with
// SQLite's bare "database disk image is malformed", so that a process
// can tell a damage no retry mends (`leasehold work` stops on it).
func TestCorruptFileIsErrCorrupt(t *testing.T) {
	path := testdb.SQLitePath(t)
	d := openPath(t, path)
	for range 20 {
		insert(t, d, job(`{"pad":"`+strings.Repeat("x", 2000)+`"}`))
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The second half of the file, where the jobs' rows went last,
	// becomes garbage; the schema, at its start, stays readable, so the
	// file opens and the damage shows only when a statement reads it.
	half := len(data) / 2 / 4096 * 4096
	copy(data[half:], bytes.Repeat([]byte{0xA5}, len(data)-half))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	d = openPath(t, path)
	ctx := testCtx(t)
	_, probeErr := d.ClaimableQueues(ctx, &driver.ClaimableParams{Queues: map[string]bool{"q": true}, Kinds: []string{"k"}})
	_, claimErr := d.Claim(ctx, &driver.ClaimParams{Owner: "w", Queue: "q", Kinds: []string{"k"}, Limit: 10, TTL: 60e9})
	_, listErr := d.ListJobs(ctx, &leasehold.ListParams{Limit: 100})
	for name, err := range map[string]error{"probe": probeErr, "claim": claimErr, "list": listErr} {
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "restore it from a backup") {
			t.Errorf("%s on a corrupt file: %v; want ErrCorrupt, saying to restore the file", name, err)
		}
	}
}
